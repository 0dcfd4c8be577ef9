import 'server-only'
import { interruptibleRest } from '@/lib/server/platform/interruptible-rest'
import type { Db } from '@/lib/server/platform/db'
import type { Logger } from '@/lib/server/platform/log'
import { indexSearchBacklog, searchBacklogTip } from './search-index-store'

/**
 * The search indexer (docs/ARCHITECTURE.md#search-index); its SQL is in search-index-store.ts. Why a crash loses or
 * doubles nothing (docs/ARCHITECTURE.md#where-crash-safety-comes-from):
 *
 * 1. The drainer writes each batch's id range to search_backlog in the batch's own transaction, so a stored row is
 *    always either in the backlog (a search reads it directly) or indexed, never neither.
 * 2. Indexing deletes a few ranges and writes their search rows in one transaction: dying, or the database going
 *    away, before the commit leaves the ranges in the backlog for the next pass; after it, they are indexed.
 * 3. Ranges are taken FOR UPDATE SKIP LOCKED, so several workers never index the same range at once; a row indexed
 *    twice (overlapping ranges, or a range written again) is upserted, never duplicated.
 * 4. A failed pass is logged and retried after two seconds; the indexer holds nothing in memory that a crash could lose.
 */

export type SearchIndexer = { stop(): Promise<void>; status(): { indexed: number; lastError: string | null } }

export type StartSearchIndexerOptions = {
  /** The indexer uses db.background, the pool without statement timeouts. */
  db: Db
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
export function startSearchIndexer({ db, log, idleMs = 500, duty = 0.5, maxLagIds = 250_000, busyDuty = 0.25 }: StartSearchIndexerOptions): SearchIndexer {
  const sql = db.background
  let stopped = false
  let indexed = 0
  let lastError: string | null = null
  const { rest, interrupt } = interruptibleRest()

  let lastNewest: string | null = null
  /** 'defer' while new ranges keep arriving and the lag is within bounds; 'share' past the bounds; else 'catch-up'. */
  const pace = async (): Promise<'defer' | 'share' | 'catch-up'> => {
    const { newest, ids } = await searchBacklogTip({ sql })
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
      interrupt()
      await loop
    },
  }
}
