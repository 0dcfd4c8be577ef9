import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import { evaluateAlerts } from './evaluate-alerts'

export type AlertLoop = { stop(): Promise<void> }

/** Evaluates the alert rules every `everyMs`; with several processes, one evaluates at a time (advisory lock). */
export function startAlertLoop({ sql, log, everyMs, publicUrl }: { sql: Sql; log: Logger; everyMs: number; publicUrl?: string }): AlertLoop {
  let stopped = false
  let timer: NodeJS.Timeout | null = null
  let running: Promise<void> = Promise.resolve()
  let lastError: string | null = null
  const tick = () => {
    timer = null
    running = (async () => {
      try {
        const { events } = await evaluateAlerts({ sql, publicUrl })
        for (const e of events.filter((e) => e.state === 'firing')) {
          log.warn('alert', { subject: e.subject.label, rate: e.ratePerMinute, notified: e.notified, failedDeliveries: e.delivery.filter((d) => !d.ok).length })
        }
        lastError = null
      } catch (error) {
        const message = (error as Error).message
        if (message !== lastError) log.warn('alert evaluation failed; will retry', { error: message })
        lastError = message
      }
      if (!stopped) timer = setTimeout(tick, everyMs)
    })()
  }
  timer = setTimeout(tick, Math.min(everyMs, 5_000))
  return {
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await running
    },
  }
}
