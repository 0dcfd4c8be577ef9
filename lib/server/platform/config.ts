import 'server-only'
import { readFileSync } from 'node:fs'
import { z } from 'zod'
import { allowedWebhookHostSchema, MAX_ALLOWED_WEBHOOK_HOSTS } from '@/lib/shared/schemas/webhook-settings'
import { customTargetPatternSchema, MAX_CUSTOM_TARGET_PATTERNS } from '@/lib/shared/schemas/replay-targets'
import { traceUrlTemplateSchema } from '@/lib/shared/schemas/trace-settings'
import { isCidrOrIp } from '@/lib/server/platform/addresses'
import { parseGroupRoles } from '@/lib/shared/group-roles'
import { LOG_LEVELS, logger, setLogLevel } from '@/lib/server/platform/log'

const queueList = z
  .string()
  .transform((raw) => raw.split(',').map((q) => q.trim()).filter(Boolean))
  .pipe(z.array(z.string().min(1).max(255)))

const flag = z.enum(['0', '1', 'true', 'false']).transform((v) => v === '1' || v === 'true')

const headerName = z
  .string()
  .regex(/^[A-Za-z0-9-]{1,100}$/, 'must be an HTTP header name')
  .transform((h) => h.toLowerCase())

const cidrList = z
  .string()
  .transform((raw) => raw.split(/[\s,]+/).filter(Boolean))
  .pipe(z.array(z.string().refine(isCidrOrIp, 'must be an IP address or a CIDR range such as 10.0.0.0/8')).max(100))

const groupRoles = z
  .string()
  .transform((raw, ctx) => {
    try {
      return parseGroupRoles(raw)
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message })
      return z.NEVER
    }
  })

const url = (protocols: string[]) =>
  z.string().refine((value) => {
    try {
      return protocols.includes(new URL(value).protocol)
    } catch {
      return false
    }
  }, `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`)

/**
 * Every variable Lazarus reads, one entry each with its doc comment, range and default (the README lists them too).
 * The entries look alike on purpose: they are the reference, read one at a time.
 */
const configSchema = z.object({
  /** PostgreSQL connection string. Unset: an embedded PGlite database under LAZARUS_DATA_DIR. */
  DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
  /** Where the embedded database lives when DATABASE_URL is unset. */
  LAZARUS_DATA_DIR: z.string().min(1).default('.data'),
  AMQP_URL: url(['amqp:', 'amqps:']).default('amqp://guest:guest@127.0.0.1:5672'),
  RABBITMQ_MANAGEMENT_URL: url(['http:', 'https:']).default('http://guest:guest@127.0.0.1:15672'),
  /**
   * NATS server(s) for JetStream sources, comma-separated (`nats://host:4222`, `tls://…`; `nats://user:pass@…` works).
   * Unset: no JetStream capture runs (docs/jetstream.md).
   */
  LAZARUS_NATS_URL: z
    .string()
    .transform((raw) => raw.split(',').map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(url(['nats:', 'tls:', 'ws:', 'wss:'])).min(1).max(16))
    .optional(),
  /** NATS user and password, when not in the URL. */
  LAZARUS_NATS_USER: z.string().min(1).max(1024).optional(),
  LAZARUS_NATS_PASSWORD: z.string().min(1).max(4096).optional(),
  /** A NATS auth token. */
  LAZARUS_NATS_TOKEN: z.string().min(1).max(4096).optional(),
  /** A NATS credentials file (JWT and NKey seed, as `nsc` writes it). */
  LAZARUS_NATS_CREDS_FILE: z.string().min(1).max(4096).optional(),
  /** An NKey seed (`SU…`), for servers that authenticate by NKey. */
  LAZARUS_NATS_NKEY_SEED: z.string().regex(/^SU[A-Z2-7]{56}$/, 'must be a user NKey seed (SU…)').optional(),
  /**
   * The durable consumer Lazarus reads failure advisories with. Two Lazarus installations on one NATS account need two
   * names: each reads every advisory once.
   */
  LAZARUS_NATS_CONSUMER: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a consumer name of letters, digits, _ and -').default('lazarus-capture'),
  /** How long the server waits for a captured advisory's ack before it delivers it again (a capture that died). */
  LAZARUS_NATS_ACK_WAIT_S: z.coerce.number().int().min(1).max(3600).default(30),
  /** The JetStream stream Lazarus creates to keep consumers' failure advisories until they are captured. */
  LAZARUS_NATS_ADVISORY_STREAM: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a stream name of letters, digits, _ and -').default('LAZARUS_ADVISORIES'),
  /** Terminal DLQs (default vhost) to drain, comma-separated; more can be added through POST /api/sources. */
  LAZARUS_SOURCES: queueList.default([]),
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  /** Deliveries per database transaction. */
  LAZARUS_DRAIN_BATCH: z.coerce.number().int().min(1).max(5000).default(500),
  /** Unacked deliveries per DLQ consumer; larger than the batch so consumption continues while a batch commits. */
  LAZARUS_DRAIN_PREFETCH: z.coerce.number().int().min(1).max(65535).default(2000),
  /** Longest a partial batch waits before it is written, in milliseconds. */
  LAZARUS_DRAIN_FLUSH_MS: z.coerce.number().int().min(1).max(60_000).default(50),
  /**
   * How often a drainer re-reads the sources, in milliseconds: sources added or changed by another process apply
   * within it, and a consumer whose queue was missing starts once it exists. Changes through this process's API apply
   * at once.
   */
  LAZARUS_DRAIN_RECONCILE_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  /** Bodies above this many bytes are stored but flagged "oversized". */
  LAZARUS_MAX_BODY_BYTES: z.coerce.number().int().min(1).default(16 * 1024 * 1024),
  /** A message whose replay count (x-lazarus-replay-count of the copy that died) has reached this is not replayed again. */
  LAZARUS_REPLAY_CAP: z.coerce.number().int().min(1).max(1000).default(5),
  /** Bodies above this many bytes are reported as "cannot replay" (keep it under the broker's max_message_size). */
  LAZARUS_REPLAY_MAX_BODY_BYTES: z.coerce.number().int().min(1).default(16 * 1024 * 1024),
  /** Messages per second a replay job publishes when the request names no rate. */
  LAZARUS_REPLAY_DEFAULT_RATE: z.coerce.number().int().min(1).max(50_000).default(500),
  /** Unconfirmed publishes per replay job (the in-flight window). */
  LAZARUS_REPLAY_WINDOW: z.coerce.number().int().min(1).max(10_000).default(1000),
  /** How long a worker's claim on a replay job lasts without renewal; after a crash another worker takes over then. */
  LAZARUS_REPLAY_LEASE_MS: z.coerce.number().int().min(500).max(600_000).default(30_000),
  /** A publish not confirmed within this many milliseconds counts as failed ("confirm timeout"). */
  LAZARUS_REPLAY_CONFIRM_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  /** How long a replay waits for a second person's approval before it expires, in hours (the admin's setting overrides it). */
  LAZARUS_REPLAY_APPROVAL_TTL_H: z.coerce.number().min(0.01).max(24 * 30).default(24),
  /** Replay jobs one process runs at the same time. */
  LAZARUS_REPLAY_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** How often an idle executor looks for replay jobs, in milliseconds (jobs created in the same process start at once). */
  LAZARUS_REPLAY_POLL_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  /** A staged replay halted by its re-failures and neither resumed nor cancelled for this many minutes is cancelled. */
  LAZARUS_REPLAY_HALT_TIMEOUT_MIN: z.coerce.number().min(0.05).max(43_200).default(60),
  /**
   * Exchanges a custom replay target may name, comma-separated patterns with `*` as the wildcard, e.g.
   * `orders.*,billing.retry`. Added to the allow-list an admin edits at /api/settings/replay-targets, for
   * infrastructure as code. Unset and nothing stored: custom targets are refused. `amq.*` and Lazarus' own control and
   * hold exchanges are never targets, whatever the list says.
   */
  LAZARUS_REPLAY_TARGET_PATTERNS: z
    .string()
    .transform((raw) => raw.split(',').map((p) => p.trim()).filter(Boolean))
    .pipe(z.array(customTargetPatternSchema).max(MAX_CUSTOM_TARGET_PATTERNS))
    .default([]),
  /** Topic exchange pause and resume events go out on; guards subscribe to it (their `controlExchange` option). */
  LAZARUS_CONTROL_EXCHANGE: z.string().min(1).max(255).default('lazarus.control'),
  /** Fanout exchange guards hold messages in, and the durable queue of the same name bound to it (their `holdExchange`). */
  LAZARUS_HOLD_QUEUE: z.string().min(1).max(255).default('lazarus.hold'),
  /** Lines below this level are not logged. */
  LAZARUS_LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  /** Run the drainer inside the web process (npm start). Set to 0 when separate workers drain. */
  LAZARUS_RUN_WORKERS: z
    .enum(['0', '1', 'true', 'false'])
    .default('1')
    .transform((v) => v === '1' || v === 'true'),
  /** Replayed and resolved messages are deleted this many days after that happened (0 keeps them forever). Dead and held ones never are. */
  LAZARUS_RETENTION_DAYS: z.coerce.number().int().min(0).max(36_500).default(30),
  /** Seconds between topology doctor runs on each watched vhost (docs/topology.md); 0 runs it only on demand. */
  LAZARUS_TOPOLOGY_INTERVAL_S: z.coerce.number().int().min(0).max(86_400).default(60),
  /** Vhosts the topology doctor reads, comma-separated (default: the vhost of AMQP_URL). */
  LAZARUS_TOPOLOGY_VHOSTS: queueList.optional(),
  /**
   * Classic delay queues whose first messages the doctor may peek at for their per-message TTLs, comma-separated
   * names (in any watched vhost). Off by default: a peek takes the messages and puts them back (docs/topology.md#sampling).
   */
  LAZARUS_TOPOLOGY_SAMPLE_QUEUES: queueList.default([]),
  /** Seconds between inflow-alert evaluations. */
  LAZARUS_ALERT_INTERVAL_S: z.coerce.number().int().min(1).max(3600).default(30),
  /**
   * POSTs one alert webhook receives per clock minute at most (docs/ARCHITECTURE.md#alerts). Notifications over the cap
   * wait for the next minute, merged into that minute's digest of their rule; nothing is dropped from the history.
   * Slack accepts about one message a second per webhook, PagerDuty 120 events a minute per routing key.
   */
  LAZARUS_WEBHOOK_MAX_PER_MINUTE: z.coerce.number().int().min(1).max(600).default(20),
  /** Base URL of this Lazarus for links in alerts and tickets, e.g. https://lazarus.example.com (default: none, relative links). */
  LAZARUS_PUBLIC_URL: z.string().url().optional(),
  /**
   * The "Open trace" link of a message's trace (docs/ARCHITECTURE.md#traces): an http or https URL with `{traceId}`
   * (and optionally `{spanId}`), e.g. `https://grafana.example.com/explore?...{traceId}...`. A template an admin saves in
   * Settings wins over this one. Unset and none saved: trace ids are shown without a link.
   */
  LAZARUS_TRACE_URL_TEMPLATE: traceUrlTemplateSchema.optional(),
  /**
   * Hosts, IP addresses and CIDR ranges alert webhooks may reach although they are not public (loopback, private,
   * link-local…), comma-separated, e.g. `mattermost.corp,10.1.2.3,10.8.0.0/16`. Added to the allow-list an admin edits
   * at /api/settings/webhooks, for infrastructure as code. The metadata, unspecified and multicast addresses stay refused.
   */
  LAZARUS_WEBHOOK_ALLOWED_HOSTS: z
    .string()
    .transform((raw) => raw.split(',').map((h) => h.trim()).filter(Boolean))
    .pipe(z.array(allowedWebhookHostSchema).max(MAX_ALLOWED_WEBHOOK_HOSTS))
    .default([]),
  /**
   * Addresses (IPs or CIDR ranges, comma-separated) of authenticating proxies in front of Lazarus. Only a TCP peer in
   * this list may send X-Forwarded-* headers or the user and group headers of proxy sign-in; anyone else's are dropped.
   */
  LAZARUS_TRUSTED_PROXIES: cidrList.default([]),
  /** Header a trusted proxy puts the signed-in user's e-mail address in (oauth2-proxy: X-Forwarded-Email). */
  LAZARUS_PROXY_USER_HEADER: headerName.default('x-forwarded-email'),
  /** Header a trusted proxy puts the user's groups in, comma-separated (oauth2-proxy: X-Forwarded-Groups). */
  LAZARUS_PROXY_GROUPS_HEADER: headerName.default('x-forwarded-groups'),
  /** OpenID Connect issuer URL (https), e.g. https://login.example.com/realms/ops. Unset: no single sign-on. */
  LAZARUS_OIDC_ISSUER: url(['https:']).optional(),
  LAZARUS_OIDC_CLIENT_ID: z.string().min(1).max(512).optional(),
  LAZARUS_OIDC_CLIENT_SECRET: z.string().min(1).max(4096).optional(),
  /** Scopes requested at sign-in. */
  LAZARUS_OIDC_SCOPES: z.string().min(1).max(1024).default('openid email profile'),
  /** The ID token / userinfo claim that lists the user's groups. */
  LAZARUS_OIDC_GROUPS_CLAIM: z.string().min(1).max(256).default('groups'),
  /** Name of the sign-in button. */
  LAZARUS_OIDC_NAME: z.string().min(1).max(64).default('single sign-on'),
  /**
   * Groups (from the OIDC groups claim or the proxy's groups header) to roles, entries separated by `;` or newlines:
   * `group=role` or `group=role:pattern` (the role on the sources whose queue matches the pattern), e.g.
   * `lazarus-admins=admin; sre=operator; billing-dev=operator:billing.*; staff=viewer`. The last `=` separates.
   */
  LAZARUS_GROUP_ROLES: groupRoles.default([]),
  /** Local accounts (e-mail and password). Set to 0 when everyone signs in through single sign-on or a proxy. */
  LAZARUS_LOCAL_ACCOUNTS: flag.default(true),
  /** The first admin, created at start-up when no user exists yet (both must be set). */
  LAZARUS_ADMIN_EMAIL: z.string().email().max(320).optional(),
  LAZARUS_ADMIN_PASSWORD: z.string().min(12, 'must be at least 12 characters').max(1024).optional(),
  /** An admin API token for provisioning and automated checks (at least 32 characters), or its SHA-256 in hex. */
  LAZARUS_ADMIN_TOKEN: z.string().min(32, 'must be at least 32 characters').max(1024).optional(),
  LAZARUS_ADMIN_TOKEN_SHA256: z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits').optional(),
  /** A browser session ends after this many minutes without a request. */
  LAZARUS_SESSION_IDLE_MINUTES: z.coerce.number().int().min(1).max(43_200).default(480),
  /** A browser session ends this many hours after sign-in, whatever happens. */
  LAZARUS_SESSION_MAX_HOURS: z.coerce.number().min(0.001).max(8_760).default(24),
  /** Interactive (request-time) SQL statements are cancelled after this many milliseconds. */
  LAZARUS_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(20_000),
  /** Connections of the web requests' pool; background work (drain, replay, indexing) has its own pool. */
  LAZARUS_DB_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(16),
  /** Mutating requests one user (or token) may make per minute. */
  LAZARUS_MUTATIONS_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(300),
  /** Exports (and tickets) one user may start per minute, and how many may run at once. */
  LAZARUS_EXPORTS_PER_MINUTE: z.coerce.number().int().min(1).max(10_000).default(20),
  LAZARUS_CONCURRENT_EXPORTS: z.coerce.number().int().min(1).max(100).default(2),
  /** Requests one user may have in progress at once (beyond it: 429), so one client cannot hold the whole pool. */
  LAZARUS_CONCURRENT_REQUESTS: z.coerce.number().int().min(1).max(1_000).default(8),
})

export type Config = z.infer<typeof configSchema>

export type ConfigProblem = { variable: string; problem: string }

export class ConfigError extends Error {
  override name = 'ConfigError'

  constructor(readonly problems: ConfigProblem[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.problem}`).join('\n')}`)
  }
}

/**
 * Variables that hold secrets. Each may instead be given as `<NAME>_FILE`, the path of a file holding the value
 * (Docker and Kubernetes secrets); a trailing newline is ignored. Setting both is an error.
 */
export const SECRET_VARIABLES = [
  'DATABASE_URL',
  'AMQP_URL',
  'RABBITMQ_MANAGEMENT_URL',
  'LAZARUS_OIDC_CLIENT_SECRET',
  'LAZARUS_ADMIN_PASSWORD',
  'LAZARUS_ADMIN_TOKEN',
  'LAZARUS_ADMIN_TOKEN_SHA256',
  'LAZARUS_NATS_PASSWORD',
  'LAZARUS_NATS_TOKEN',
  'LAZARUS_NATS_NKEY_SEED',
] as const

function readSecretFiles(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const out = { ...env }
  const problems: ConfigProblem[] = []
  for (const name of SECRET_VARIABLES) {
    const file = env[`${name}_FILE`]
    if (!file) continue
    if (env[name]) {
      problems.push({ variable: name, problem: `set either ${name} or ${name}_FILE, not both` })
      continue
    }
    try {
      out[name] = readFileSync(file, 'utf8').replace(/\r?\n$/, '')
    } catch (error) {
      problems.push({ variable: `${name}_FILE`, problem: `cannot read ${JSON.stringify(file)} (${(error as NodeJS.ErrnoException).code ?? 'error'})` })
    }
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return out
}

export function parseConfig(rawEnv: Record<string, string | undefined>): Config {
  const env = readSecretFiles(rawEnv)
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''))
  const result = configSchema.safeParse(cleaned)
  if (result.success) return result.data
  throw new ConfigError(result.error.issues.map((issue) => ({ variable: issue.path.join('.') || '(env)', problem: issue.message })))
}

let cached: Config | undefined

export function getConfig(): Config {
  if (!cached) {
    cached = parseConfig(process.env)
    setLogLevel(cached.LAZARUS_LOG_LEVEL)
  }
  return cached
}

/** For process entry points: a bad value stops start-up with a message naming the variable (exit code 78, EX_CONFIG). */
export function getConfigOrExit(): Config {
  try {
    return getConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      const log = logger('config')
      for (const { variable, problem } of error.problems) log.error('invalid configuration', { variable, problem })
      process.exit(78)
    }
    throw error
  }
}

/**
 * Every environment variable Lazarus reads: the configuration's, each secret's `<NAME>_FILE` form, and what Node and
 * the listener read (HOSTNAME: lib/cli/listen.ts). Deployment files may set these and nothing else (the Kubernetes
 * manifests' test checks them).
 */
export const ENVIRONMENT_VARIABLES: readonly string[] = [...Object.keys(configSchema.shape), ...SECRET_VARIABLES.map((name) => `${name}_FILE`), 'HOSTNAME', 'NODE_ENV', 'TZ']
