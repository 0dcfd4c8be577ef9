import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import { runRetention } from './run-retention'

export type RetentionLoop = { stop(): Promise<void> }

/** Runs retention shortly after start-up and then every `everyMs`, resting between batches so it stays in the background. */
export function startRetentionLoop({ sql, log, days, everyMs = 3_600_000, firstAfterMs = 60_000 }: { sql: Sql; log: Logger; days: number; everyMs?: number; firstAfterMs?: number }): RetentionLoop {
  let stopped = false
  let timer: NodeJS.Timeout | null = null
  let running: Promise<void> = Promise.resolve()
  const tick = () => {
    timer = null
    running = (async () => {
      try {
        let more = true
        while (more && !stopped) {
          const result = await runRetention({ sql, days, maxBatches: 20 })
          if (result.deleted > 0) log.info('retention deleted replayed and resolved messages', { deleted: result.deleted, before: result.cutoff.toISOString() })
          more = result.more
          if (more) await new Promise((resolve) => setTimeout(resolve, 1_000))
        }
      } catch (error) {
        log.warn('retention failed; will retry', { error: (error as Error).message })
      }
      if (!stopped) timer = setTimeout(tick, everyMs)
    })()
  }
  if (days > 0) timer = setTimeout(tick, firstAfterMs)
  return {
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await running
    },
  }
}
