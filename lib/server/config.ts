import 'server-only'
import { z } from 'zod'

const queueList = z
  .string()
  .transform((raw) => raw.split(',').map((q) => q.trim()).filter(Boolean))
  .pipe(z.array(z.string().min(1).max(255)))

const url = (protocols: string[]) =>
  z.string().refine((value) => {
    try {
      return protocols.includes(new URL(value).protocol)
    } catch {
      return false
    }
  }, `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`)

const configSchema = z.object({
  /** PostgreSQL connection string. Unset: an embedded PGlite database under LAZARUS_DATA_DIR. */
  DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
  /** Where the embedded database lives when DATABASE_URL is unset. */
  LAZARUS_DATA_DIR: z.string().min(1).default('.data'),
  AMQP_URL: url(['amqp:', 'amqps:']).default('amqp://guest:guest@127.0.0.1:5672'),
  RABBITMQ_MANAGEMENT_URL: url(['http:', 'https:']).default('http://guest:guest@127.0.0.1:15672'),
  /** Terminal DLQs (default vhost) to drain, comma-separated; more can be added through POST /api/sources. */
  LAZARUS_SOURCES: queueList.default([]),
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  /** Deliveries per database transaction. */
  LAZARUS_DRAIN_BATCH: z.coerce.number().int().min(1).max(5000).default(500),
  /** Unacked deliveries per DLQ consumer; larger than the batch so consumption continues while a batch commits. */
  LAZARUS_DRAIN_PREFETCH: z.coerce.number().int().min(1).max(65535).default(2000),
  /** Longest a partial batch waits before it is written, in milliseconds. */
  LAZARUS_DRAIN_FLUSH_MS: z.coerce.number().int().min(1).max(60_000).default(50),
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
  /** Replay jobs one process runs at the same time. */
  LAZARUS_REPLAY_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** How often an idle executor looks for replay jobs, in milliseconds (jobs created in the same process start at once). */
  LAZARUS_REPLAY_POLL_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  /** Topic exchange pause and resume events go out on; guards subscribe to it (their `controlExchange` option). */
  LAZARUS_CONTROL_EXCHANGE: z.string().min(1).max(255).default('lazarus.control'),
  /** Fanout exchange guards hold messages in, and the durable queue of the same name bound to it (their `holdExchange`). */
  LAZARUS_HOLD_QUEUE: z.string().min(1).max(255).default('lazarus.hold'),
  /** Run the drainer inside the web process (npm start). Set to 0 when separate workers drain. */
  LAZARUS_RUN_WORKERS: z
    .enum(['0', '1', 'true', 'false'])
    .default('1')
    .transform((v) => v === '1' || v === 'true'),
  /** Replayed and resolved messages are deleted this many days after that happened (0 keeps them forever). Dead and held ones never are. */
  LAZARUS_RETENTION_DAYS: z.coerce.number().int().min(0).max(36_500).default(30),
  /** Seconds between inflow-alert evaluations. */
  LAZARUS_ALERT_INTERVAL_S: z.coerce.number().int().min(1).max(3600).default(30),
  /** Base URL of this Lazarus for links in alerts and tickets, e.g. https://lazarus.example.com (default: none, relative links). */
  LAZARUS_PUBLIC_URL: z.string().url().optional(),
})

export type Config = z.infer<typeof configSchema>

export class ConfigError extends Error {
  override name = 'ConfigError'
}

export function parseConfig(env: Record<string, string | undefined>): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''))
  const result = configSchema.safeParse(cleaned)
  if (result.success) return result.data
  const lines = result.error.issues.map((issue) => `  ${issue.path.join('.') || '(env)'}: ${issue.message}`)
  throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`)
}

let cached: Config | undefined

export function getConfig(): Config {
  cached ??= parseConfig(process.env)
  return cached
}

/** For process entry points: a bad value stops start-up with a message naming the variable (exit code 78, EX_CONFIG). */
export function getConfigOrExit(): Config {
  try {
    return getConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message)
      process.exit(78)
    }
    throw error
  }
}
