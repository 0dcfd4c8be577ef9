/**
 * React Query key factory shared by every client hook (and any future server prefetch), so invalidating
 * `messageKeys.all` reaches lists, counts and details alike.
 */
export type QueryParams = Record<string, string>

export const groupKeys = {
  all: ['groups'] as const,
  lists: () => [...groupKeys.all, 'list'] as const,
  list: (params: QueryParams) => [...groupKeys.lists(), params] as const,
  details: () => [...groupKeys.all, 'detail'] as const,
  detail: (id: string, range: string) => [...groupKeys.details(), id, range] as const,
  traces: (id: string) => [...groupKeys.all, 'traces', id] as const,
}

export const messageKeys = {
  all: ['messages'] as const,
  lists: () => [...messageKeys.all, 'list'] as const,
  list: (params: QueryParams) => [...messageKeys.lists(), params] as const,
  count: (params: QueryParams) => [...messageKeys.all, 'count', params] as const,
  detail: (id: string) => [...messageKeys.all, 'detail', id] as const,
  revisions: (id: string) => [...messageKeys.all, 'revisions', id] as const,
  /** The pointers seen in recent JSON bodies (of a group or source), for the body field filter's autocompletion. */
  bodyFields: (params: QueryParams) => [...messageKeys.all, 'body-fields', params] as const,
}

export const sourceKeys = {
  all: ['sources'] as const,
  list: () => [...sourceKeys.all, 'list'] as const,
  jetstream: () => [...sourceKeys.all, 'jetstream'] as const,
}

export const summaryKeys = {
  all: ['summary'] as const,
}

export const replayKeys = {
  all: ['replays'] as const,
  lists: () => [...replayKeys.all, 'list'] as const,
  list: (params: QueryParams) => [...replayKeys.lists(), params] as const,
  details: () => [...replayKeys.all, 'detail'] as const,
  detail: (id: string) => [...replayKeys.details(), id] as const,
  items: (id: string, params: QueryParams) => [...replayKeys.detail(id), 'items', params] as const,
  refailures: (id: string) => [...replayKeys.detail(id), 'refailures'] as const,
  arrived: (id: string) => [...replayKeys.detail(id), 'arrived'] as const,
  edits: (id: string) => [...replayKeys.detail(id), 'edits'] as const,
  /** A dry run: the request body is the key, so changing the target or rate re-plans. */
  plan: (input: unknown) => [...replayKeys.all, 'plan', input] as const,
}

export const pauseKeys = {
  all: ['pauses'] as const,
  list: (status: 'active' | 'all') => [...pauseKeys.all, 'list', status] as const,
  /** GET /api/pauses/guards: who listens on a source's consumer queue (all sources: both null). */
  guards: (sourceId: string | null, queue: string | null) => [...pauseKeys.all, 'guards', sourceId, queue] as const,
}

export const auditKeys = {
  all: ['audit'] as const,
  list: (params: QueryParams) => [...auditKeys.all, 'list', params] as const,
}

export const alertKeys = {
  all: ['alerts'] as const,
  /** GET /api/alerts: what is firing now, the rules and the webhooks (the header's banner reads it too). */
  overview: () => [...alertKeys.all, 'overview'] as const,
  events: () => [...alertKeys.all, 'events'] as const,
}

/** The settings page's sections; an allow-list is keyed by its endpoint (replay targets, webhook hosts). */
export const settingsKeys = {
  all: ['settings'] as const,
  redaction: () => [...settingsKeys.all, 'redaction'] as const,
  retention: () => [...settingsKeys.all, 'retention'] as const,
  replayConfirm: () => [...settingsKeys.all, 'replay-confirm'] as const,
  replayApproval: () => [...settingsKeys.all, 'replay-approval'] as const,
  traces: () => [...settingsKeys.all, 'traces'] as const,
  allowList: (path: string) => [...settingsKeys.all, path] as const,
}

export const accessKeys = {
  all: ['access'] as const,
  users: () => [...accessKeys.all, 'users'] as const,
  tokens: () => [...accessKeys.all, 'tokens'] as const,
}

export const viewKeys = {
  all: ['views'] as const,
}

export const topologyKeys = {
  all: ['topology'] as const,
  /** GET /api/topology: one vhost's graph (the default vhost: null), or a source's part of it. */
  graph: (vhost: string | null, source: string | null) => [...topologyKeys.all, 'graph', vhost, source] as const,
  /** GET /api/topology/findings: one vhost's (null: every vhost's), or with broker `jetstream` the NATS server's. */
  findings: (vhost: string | null, state: 'open' | 'all', broker: 'jetstream' | null = null) => [...topologyKeys.all, 'findings', vhost, state, broker] as const,
}
