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
  /** Run the drainer inside the web process (npm start). Set to 0 when separate workers drain. */
  LAZARUS_RUN_WORKERS: z
    .enum(['0', '1', 'true', 'false'])
    .default('1')
    .transform((v) => v === '1' || v === 'true'),
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
