import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { ingestRow } from '../helpers/ingest-row'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { evaluateAlerts } from '@/lib/server/engines/alert-evaluator/evaluate-alerts'
import { updateWebhookSettings } from '@/lib/server/alerts/webhook-settings'

const MINUTE = 60_000
const SECOND = 1_000
const GROUPS = 500
const CAP = 2

/**
 * Storm control (docs/ARCHITECTURE.md#alerts): 500 groups fail at once under three rules. Each webhook gets one POST
 * per rule and round, never more than its cap per minute; every firing is in the history, and every notified one
 * reaches every webhook in the end.
 */
describe('an alert storm', () => {
  let db: TestDb
  let sourceId: string
  let slack: WebhookReceiver
  let generic: WebhookReceiver
  /** When each POST arrived, by the evaluation's clock. */
  const arrivals: { receiver: string; minute: number }[] = []
  const t0 = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 3 * 60 * MINUTE)
  const at = (ms: number) => new Date(t0.getTime() + ms)
  const evaluate = async (ms: number) => {
    const before = { slack: slack.bodies.length, generic: generic.bodies.length }
    const result = await evaluateAlerts({ db, now: at(ms), publicUrl: 'https://lazarus.example.com', maxPostsPerMinute: CAP })
    for (const [name, r] of [['slack', slack], ['generic', generic]] as const) {
      for (let i = before[name]; i < r.bodies.length; i++) arrivals.push({ receiver: name, minute: Math.floor(ms / MINUTE) })
    }
    return result
  }

  beforeAll(async () => {
    db = await createTestDb()
    sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('orders.dlq') RETURNING id::text`)).rows[0].id
    await updateWebhookSettings({ db, input: { allowedHosts: ['127.0.0.1'] }, actor: 'ops' })
    slack = await startWebhookReceiver()
    generic = await startWebhookReceiver()
    await db.sql.query(`INSERT INTO alert_webhooks (url, format) VALUES ($1, 'slack'), ($2, 'generic')`, [slack.url, generic.url])
    await db.sql.query(
      `INSERT INTO alert_rules (kind, threshold_per_minute, window_minutes, cooldown_minutes, created_by) VALUES
         ('group-rate', 0.2, 5, 30, 'ops'), ('source-rate', 100, 5, 30, 'ops'), ('new-group', NULL, 5, 30, 'ops')`,
    )
  })
  afterAll(async () => {
    await slack?.close()
    await generic?.close()
    await db?.drop()
  })

  it('500 groups at once: under the cap per webhook and minute, nothing lost from the history, everything delivered', async () => {
    await storeBatch({
      sql: db.sql,
      sourceId,
      sourceLabel: 'orders.dlq',
      rows: Array.from({ length: GROUPS }, (_, i) => ingestRow({ failedAt: new Date(at(MINUTE).getTime() - i * 10), signature: `v1:storm-${i}`, title: `StormException ${i}`, failureKind: 'transient' })),
    })
    const first = await evaluate(MINUTE)
    // Every firing is recorded: one per group for each group rule, one for the source.
    const firing = first.events.filter((e) => e.state === 'firing')
    expect(firing.filter((e) => e.kind === 'group-rate')).toHaveLength(GROUPS)
    expect(firing.filter((e) => e.kind === 'new-group')).toHaveLength(GROUPS)
    expect(firing.filter((e) => e.kind === 'source-rate')).toHaveLength(1)
    // Three digests, two POSTs allowed per webhook this minute.
    expect([slack.bodies.length, generic.bodies.length]).toEqual([CAP, CAP])

    await evaluate(MINUTE + 30 * SECOND) // same minute: the third digest waits
    expect([slack.bodies.length, generic.bodies.length]).toEqual([CAP, CAP])
    await evaluate(2 * MINUTE + SECOND)
    expect([slack.bodies.length, generic.bodies.length]).toEqual([3, 3])

    const perMinute = new Map<string, number>()
    for (const a of arrivals) perMinute.set(`${a.receiver}@${a.minute}`, (perMinute.get(`${a.receiver}@${a.minute}`) ?? 0) + 1)
    expect(Math.max(...perMinute.values())).toBeLessThanOrEqual(CAP)

    // A digest says how many it leaves out, and carries them all in `alerts` (generic).
    const groupDigest = generic.bodies.find((b) => b.alert.kind === 'group-rate')
    expect(groupDigest.alerts).toHaveLength(GROUPS)
    expect(groupDigest.text.split('\n').at(-1)).toBe(`… and ${GROUPS - 20} more`)
    const slackDigest = slack.bodies.find((b) => /error groups over/.test(b.text))
    expect(slackDigest.blocks.length).toBeLessThanOrEqual(50)
    expect(JSON.stringify(slackDigest.blocks)).toContain(`and ${GROUPS - 10} more groups`)

    // Nothing lost: every notified firing was accepted by both webhooks; nothing is left due.
    const { rows } = await db.sql.query<{ n: number; delivered: number; due: number }>(
      `SELECT count(*)::int AS n,
         count(*) FILTER (WHERE jsonb_array_length(delivery) = 2 AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(delivery) d WHERE NOT (d->>'ok')::boolean))::int AS delivered,
         count(*) FILTER (WHERE next_delivery_at IS NOT NULL)::int AS due
       FROM alert_events WHERE state = 'firing' AND notified`,
    )
    expect(rows[0]).toEqual({ n: 2 * GROUPS + 1, delivered: 2 * GROUPS + 1, due: 0 })
  })
})
