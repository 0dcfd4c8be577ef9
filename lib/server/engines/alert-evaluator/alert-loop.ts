import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Logger } from '@/lib/server/platform/log'
import { startTimedLoop, type TimedLoop } from '@/lib/server/platform/timed-loop'
import { evaluateAlerts } from './evaluate-alerts'

/**
 * The alert evaluator (docs/ARCHITECTURE.md#alerts): this loop, one evaluation (evaluate-alerts.ts), the delivery
 * of recorded events (deliver-pending-alerts.ts) and its SQL (alert-store.ts). Why a crash loses or doubles nothing
 * that matters (docs/ARCHITECTURE.md#where-crash-safety-comes-from):
 *
 * 1. An evaluation reads the rates and records breaches, recoveries, the rules' states and the new-group cursor in
 *    one transaction, under a transaction-scoped advisory lock: dying, or the database going away, before the commit
 *    records nothing (the next evaluation sees the same rates); after it, every event is recorded once. Two processes
 *    never evaluate at once.
 * 2. Delivery runs after the commit: an event due is first claimed (its next attempt pushed a minute ahead,
 *    FOR UPDATE SKIP LOCKED, so no two processes send it at once), then sent, then its delivery recorded. Dying before
 *    the send only delays the event until the claim runs out; dying after the send but before the record sends it
 *    again: webhooks get each alert at least once, and never again once their acceptance is recorded.
 * 3. A webhook that is down or refuses keeps the event due: retried at 30 s, 1, 2, 4, 8, then every 10 minutes, for
 *    an hour.
 *    A webhook over its per-minute cap keeps it due until the next minute (storm control).
 * 4. A rule's resolution is recorded by the evaluation that closes the rule's incident, in its transaction: once.
 * 5. A failed evaluation is logged and tried again at the next interval; the loop holds nothing in memory.
 */

export type AlertLoop = TimedLoop

export type StartAlertLoopOptions = {
  /** The evaluator uses db.background, the pool without statement timeouts. */
  db: Db
  log: Logger
  /** LAZARUS_ALERT_INTERVAL_S, in milliseconds. */
  everyMs: number
  /** LAZARUS_PUBLIC_URL, for links in the alerts' texts. */
  publicUrl?: string
}

/** Evaluates the alert rules every `everyMs`; with several processes, one evaluates at a time (advisory lock). */
export function startAlertLoop({ db, log, everyMs, publicUrl }: StartAlertLoopOptions): AlertLoop {
  // A database that stays away fails every round the same way: say it once, not every interval.
  let lastError: string | null = null
  return startTimedLoop({
    firstAfterMs: Math.min(everyMs, 5_000),
    everyMs,
    round: async () => {
      const { events } = await evaluateAlerts({ db, publicUrl })
      for (const e of events.filter((e) => e.state === 'firing')) {
        log.warn('alert', { subject: e.subject.label, rate: e.ratePerMinute, notified: e.notified, failedDeliveries: e.delivery.filter((d) => !d.ok).length })
      }
      lastError = null
    },
    onError: (error) => {
      if (error.message !== lastError) log.warn('alert evaluation failed; will retry', { error: error.message })
      lastError = error.message
    },
  })
}
