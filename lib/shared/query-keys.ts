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
}

export const messageKeys = {
  all: ['messages'] as const,
  lists: () => [...messageKeys.all, 'list'] as const,
  list: (params: QueryParams) => [...messageKeys.lists(), params] as const,
  count: (params: QueryParams) => [...messageKeys.all, 'count', params] as const,
  detail: (id: string) => [...messageKeys.all, 'detail', id] as const,
}

export const sourceKeys = {
  all: ['sources'] as const,
  list: () => [...sourceKeys.all, 'list'] as const,
}

export const summaryKeys = {
  all: ['summary'] as const,
}
