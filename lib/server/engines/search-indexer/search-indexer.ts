import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import { indexSearchBacklog } from './index-search-backlog'

export type SearchIndexer = { stop(): Promise<void>; status(): { indexed: number; lastError: string | null } }

export type StartSearchIndexerOptions = {
  sql: Sql
  log: Logger
  /** Pause between polls of an empty backlog. */
  idleMs?: number
  /**
   * Share of wall time spent indexing while catching up: after a chunk that took t ms, it rests t × (1 - duty) / duty.
   * Ingestion comes first (search still finds unindexed rows, only more slowly), so a burst is drained at full
   * speed and indexed as the machine has room.
   */
  duty?: number
  /**
   * While the drainer is storing (the backlog keeps growing), indexing waits until this many ids are unindexed:
   * a burst is drained first, at full speed, and rows still unindexed are searched directly (slower, still complete).
   */
  maxLagIds?: number
  /** Share of wall time spent indexing while the drainer is still storing and the lag is past maxLagIds. */
  busyDuty?: number
}

/** The background loop that keeps dead_letter_search up with what the drainer stores. */
export function startSearchIndexer({ sql, log, idleMs = 500, duty = 0.5, maxLagIds = 250_000, busyDuty = 0.25 }: StartSearchIndexerOptions): SearchIndexer {
  let stopped = false
  let indexed = 0
  let lastError: string | null = null
  let wake: (() => void) | null = null
  const rest = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = null
        resolve()
      }, ms)
      wake = () => {
        clearTimeout(timer)
        wake = null
        resolve()
      }
    })

  let lastNewest: string | null = null
  /** 'defer' while new ranges keep arriving and the lag is within bounds; 'share' past the bounds; else 'catch-up'. */
  const pace = async (): Promise<'defer' | 'share' | 'catch-up'> => {
    const { rows } = await sql.query<{ newest: string | null; ids: number }>(
      'SELECT max(id)::text AS newest, coalesce(sum(last_id - first_id + 1), 0)::float8 AS ids FROM search_backlog',
    )
    const { newest, ids } = rows[0] ?? { newest: null, ids: 0 }
    const growing = newest !== null && lastNewest !== null && newest !== lastNewest
    lastNewest = newest
    if (!growing) return 'catch-up'
    return ids < maxLagIds ? 'defer' : 'share'
  }

  const loop = (async () => {
    while (!stopped) {
      const started = performance.now()
      let share = duty
      try {
        const mode = await pace()
        if (mode === 'defer') {
          await rest(idleMs)
          continue
        }
        if (mode === 'share') share = busyDuty
        const result = await indexSearchBacklog({ sql })
        indexed += result.rows
        if (lastError) log.info('search indexing resumed')
        lastError = null
        if (!result.more) {
          await rest(idleMs)
          continue
        }
      } catch (error) {
        const message = (error as Error).message
        if (message !== lastError) log.warn('search indexing failed; retrying', { error: message })
        lastError = message
        await rest(Math.max(idleMs, 2_000))
        continue
      }
      const took = performance.now() - started
      await rest((took * (1 - share)) / share)
    }
  })()

  return {
    status: () => ({ indexed, lastError }),
    async stop() {
      stopped = true
      wake?.()
      await loop
    },
  }
}
