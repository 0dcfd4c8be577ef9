import 'server-only'
import { getConfig } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { loadWebhookPolicy } from '@/lib/server/alerts/webhook-settings'
import { loadRedactor } from '@/lib/server/redaction/redaction-rules'
import { claimDueEvents, enabledWebhooks, groupFacts, pruneWebhookPosts, recordDelivery, ruleGroups, takeWebhookPost } from './alert-store'
import { sendWebhook, type Delivery } from './deliver-webhooks'
import { buildAlertNotification } from './formats/alert-notification'
import { formatPayload } from './formats/format-payload'

/** Past this age an alert is no longer worth sending; its failed deliveries stay in the history. */
export const DELIVERY_GIVE_UP_MS = 60 * 60_000
/** A claimed event is sent within this; if the process dies meanwhile, the next evaluation takes it again. */
const CLAIM_MS = 60_000
/** Enough for a storm of every group at once to go out as one digest per rule, not a digest per 50 events. */
const BATCH = 2_000
const MINUTE_MS = 60_000

type DueEvent = Awaited<ReturnType<typeof claimDueEvents>>[number]

/**
 * The claimed events in id order, in digests: the events of one rule and state due now (those one evaluation raised,
 * and any held back by a webhook's rate cap or a failed attempt) go out as one POST per webhook. An event without a
 * rule (recorded before rules could be deleted) goes alone.
 */
function digests(rows: DueEvent[]): DueEvent[][] {
  const byKey = new Map<string, DueEvent[]>()
  for (const row of [...rows].sort((a, b) => Number(a.id) - Number(b.id))) {
    const key = row.rule_id === null ? `event:${row.id}` : `${row.rule_id}:${row.state}`
    byKey.set(key, [...(byKey.get(key) ?? []), row])
  }
  return [...byKey.values()]
}

/** 30 s, 1 min, 2 min … at most 10 min between attempts. */
export const retryDelayMs = (attempts: number) => Math.min(30_000 * 2 ** Math.max(0, attempts - 1), 10 * 60_000)

const accepted = (row: DueEvent, url: string) => (row.delivery ?? []).some((d) => d.ok && d.url === url)

export type DeliverPendingAlertsOptions = {
  /** Delivery uses db.background, the pool without statement timeouts. */
  db: Db
  now: Date
  /** LAZARUS_PUBLIC_URL, for the links and buttons of the chat and paging formats. */
  publicUrl?: string
  /** POSTs one webhook receives per clock minute at most (LAZARUS_WEBHOOK_MAX_PER_MINUTE). */
  maxPostsPerMinute?: number
}

/**
 * Sends every alert whose delivery is due (recorded, never sent; refused by a webhook earlier; or held back by a
 * webhook's rate cap) to the enabled webhooks that have not accepted it yet, each in its format: at least once per
 * webhook, at most once after a 2xx. An event is claimed (its next attempt pushed past the claim time) before
 * anything is sent, so a slow or hanging webhook holds no lock and a crash mid-send only delays the event.
 *
 * Storm control (docs/ARCHITECTURE.md#alerts): one POST per rule, state and webhook per round, whatever the number of
 * events; and at most `maxPostsPerMinute` per webhook and clock minute across processes. A digest over the cap waits
 * for the next minute, where it joins that minute's events of its rule: recorded in the history at once, sent late,
 * never dropped (until DELIVERY_GIVE_UP_MS). Returns each sent event's delivery record by event id.
 */
export async function deliverPendingAlerts({ db, now, publicUrl, maxPostsPerMinute = getConfig().LAZARUS_WEBHOOK_MAX_PER_MINUTE }: DeliverPendingAlertsOptions): Promise<Map<string, Delivery[]>> {
  const sql = db.background
  const rows = await claimDueEvents({ sql, now, claimUntil: new Date(now.getTime() + CLAIM_MS), limit: BATCH })
  const delivered = new Map<string, Delivery[]>()
  if (rows.length === 0) return delivered
  const hooks = await enabledWebhooks({ sql })
  const policy = await loadWebhookPolicy({ sql })
  // Alert texts quote error messages: they leave redacted, like exports. A stored rule that no longer compiles throws
  // here and nothing is sent; the claimed events are taken again once the claim runs out.
  const redactor = await loadRedactor({ sql })
  const groups = await groupFacts({ sql, ids: [...new Set(rows.filter((r) => r.subject_type === 'group' && r.subject_id).map((r) => r.subject_id as string))] })
  const rulesGroups = await ruleGroups({ sql, ruleIds: [...new Set(rows.flatMap((r) => (r.rule_id === null ? [] : [r.rule_id])))] })
  await pruneWebhookPosts({ sql, now })
  const nextMinute = new Date(Math.floor(now.getTime() / MINUTE_MS) * MINUTE_MS + MINUTE_MS)

  for (const digest of digests(rows)) {
    // Per webhook, the events it has not accepted yet: a webhook that took part of a digest earlier gets the rest only.
    const results = new Map<string, Delivery[]>(digest.map((row) => [row.id, []]))
    const capped = new Set<string>()
    const attempted = new Set<string>()
    await Promise.all(
      hooks.map(async (hook) => {
        const pending = digest.filter((row) => !accepted(row, hook.url))
        if (pending.length === 0) return
        if (!(await takeWebhookPost({ sql, webhookId: hook.id, now, max: maxPostsPerMinute }))) {
          for (const row of pending) capped.add(row.id)
          return
        }
        const notification = buildAlertNotification({ rows: pending, redactor, groups, ruleGroupId: pending[0].rule_id === null ? null : (rulesGroups.get(pending[0].rule_id) ?? null), publicUrl })
        const result = await sendWebhook({ url: hook.url, body: formatPayload({ notification, format: hook.format, routingKey: hook.routing_key }), policy })
        attempted.add(hook.url)
        for (const row of pending) results.get(row.id)?.push(result)
      }),
    )
    for (const row of digest) {
      const mine = results.get(row.id) ?? []
      // In webhook order, as before: the delivery list reads the same whichever webhook answered first.
      mine.sort((a, b) => hooks.findIndex((h) => h.url === a.url) - hooks.findIndex((h) => h.url === b.url))
      const delivery = [...(row.delivery ?? []).filter((d) => !mine.some((m) => m.url === d.url)), ...mine]
      const attempts = row.delivery_attempts + (mine.length > 0 ? 1 : 0)
      const expired = now.getTime() - new Date(row.at).getTime() >= DELIVERY_GIVE_UP_MS
      const retryAt = mine.some((r) => !r.ok) ? new Date(now.getTime() + retryDelayMs(attempts)) : null
      const waitAt = capped.has(row.id) ? nextMinute : null
      const next = expired ? null : [retryAt, waitAt].filter((d): d is Date => d !== null).sort((a, b) => a.getTime() - b.getTime())[0] ?? null
      await recordDelivery({ sql, eventId: row.id, delivery, attempts, next })
      delivered.set(row.id, delivery)
    }
  }
  return delivered
}
