import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import type { DrainSource } from './load-drain-sources'

const MAX_ERROR_CHARS = 1000

/**
 * Why each source is not draining, as this process last saw it, for /api/health and /api/sources: kept here and
 * written to `sources.last_error` whenever it changes (null: draining again). A write that fails is logged and not
 * retried: the next change writes again, and the value here stays right for this process.
 */
export class SourceErrors {
  private readonly last = new Map<string, string | null>()

  constructor(private readonly options: { sql: Sql; log: Logger }) {}

  get(sourceId: string): string | null {
    return this.last.get(sourceId) ?? null
  }

  /** True when `message` is what was recorded last for the source (so it was reported already). */
  isCurrent(sourceId: string, message: string | null): boolean {
    return this.last.get(sourceId) === message
  }

  record(source: Pick<DrainSource, 'id' | 'queue'>, message: string | null): void {
    if (this.isCurrent(source.id, message)) return
    this.last.set(source.id, message)
    void this.options.sql
      .query(
        message === null
          ? 'UPDATE sources SET last_error = NULL, last_error_at = NULL WHERE id = $1::bigint'
          : 'UPDATE sources SET last_error = $2, last_error_at = now() WHERE id = $1::bigint',
        message === null ? [source.id] : [source.id, message.slice(0, MAX_ERROR_CHARS)],
      )
      .catch((error: unknown) => this.options.log.warn('cannot record the source\'s error in sources.last_error', { queue: source.queue, sourceError: message, error: (error as Error).message }))
  }
}
