import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { loadWebhookPolicy } from '@/lib/server/alerts/webhook-settings'
import { loadRedactor } from '@/lib/server/redaction/redaction-rules'
import { claimDueEvents, enabledWebhookUrls, recordDelivery } from './alert-store'
import { deliverWebhooks, type Delivery } from './deliver-webhooks'
import { webhookPayload } from './webhook-payload'

/** Past this age an alert is no longer worth sending; its failed deliveries stay in the history. */
export const DELIVERY_GIVE_UP_MS = 60 * 60_000
/** A claimed event is sent within this; if the process dies meanwhile, the next evaluation takes it again. */
const CLAIM_MS = 60_000
const BATCH = 50

type DueEvent = Awaited<ReturnType<typeof claimDueEvents>>[number]

/**
 * The claimed events in id order, in digests: the events one rule raised in one evaluation (same rule, same time) go
 * out as one POST. An event without a rule (recorded before rules could be deleted) goes alone.
 */
function digests(rows: DueEvent[]): DueEvent[][] {
  const byKey = new Map<string, DueEvent[]>()
  for (const row of [...rows].sort((a, b) => Number(a.id) - Number(b.id))) {
    const key = row.rule_id === null ? `event:${row.id}` : `${row.rule_id}@${new Date(row.at).toISOString()}`
    byKey.set(key, [...(byKey.get(key) ?? []), row])
  }
  return [...byKey.values()]
}

/** 30 s, 1 min, 2 min … at most 10 min between attempts. */
export const retryDelayMs = (attempts: number) => Math.min(30_000 * 2 ** Math.max(0, attempts - 1), 10 * 60_000)

export type DeliverPendingAlertsOptions = {
  /** Delivery uses db.background, the pool without statement timeouts. */
  db: Db
  now: Date
  deliver?: typeof deliverWebhooks
}

/**
 * Sends every alert whose delivery is due (recorded, never sent; or refused by a webhook earlier) to the enabled
 * webhooks that have not accepted it yet: at least once per webhook, at most once after a 2xx. An event is claimed
 * (its next attempt pushed past the claim time) before anything is sent, so a slow or hanging webhook holds no lock
 * and a crash mid-send only delays the event. Returns each sent event's delivery record by event id.
 */
export async function deliverPendingAlerts({ db, now, deliver = deliverWebhooks }: DeliverPendingAlertsOptions): Promise<Map<string, Delivery[]>> {
  const sql = db.background
  const rows = await claimDueEvents({ sql, now, claimUntil: new Date(now.getTime() + CLAIM_MS), limit: BATCH })
  const delivered = new Map<string, Delivery[]>()
  if (rows.length === 0) return delivered
  const hooks = await enabledWebhookUrls({ sql })
  const policy = await loadWebhookPolicy({ sql })
  // Alert texts quote error messages: they leave redacted, like exports. A stored rule that no longer compiles throws
  // here and nothing is sent; the claimed events are taken again once the claim runs out.
  const redactor = await loadRedactor({ sql })
  for (const digest of digests(rows)) {
    // A webhook is skipped only when it accepted every event of the digest; the events share their deliveries.
    const urls = hooks.filter((url) => !digest.every((row) => (row.delivery ?? []).some((d) => d.ok && d.url === url)))
    const results = urls.length > 0 ? await deliver({ urls, ...webhookPayload(digest, redactor), policy }) : []
    for (const row of digest) {
      const delivery = [...(row.delivery ?? []).filter((d) => !urls.includes(d.url)), ...results]
      const attempts = row.delivery_attempts + (urls.length > 0 ? 1 : 0)
      const expired = now.getTime() - new Date(row.at).getTime() >= DELIVERY_GIVE_UP_MS
      const next = results.some((r) => !r.ok) && !expired ? new Date(now.getTime() + retryDelayMs(attempts)) : null
      await recordDelivery({ sql, eventId: row.id, delivery, attempts, next })
      delivered.set(row.id, delivery)
    }
  }
  return delivered
}
