import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { ingestRow } from '../helpers/ingest-row'
import { evaluateAlerts } from '@/lib/server/engines/alert-evaluator/evaluate-alerts'
import { updateWebhookSettings } from '@/lib/server/alerts/webhook-settings'

const MINUTE = 60_000
const SECOND = 1_000
const PUBLIC_URL = 'https://lazarus.example.com'

/**
 * One rule over every group, fifteen groups in breach at once: one webhook POST per evaluation and rule, a digest
 * listing the groups with links to LAZARUS_PUBLIC_URL, still delivered at least once (docs/ARCHITECTURE.md#alerts).
 */
describe('alert digests', () => {
  let db: TestDb
  let sourceId: string
  let receiver: WebhookReceiver
  const t0 = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 3 * 60 * MINUTE)
  const at = (ms: number) => new Date(t0.getTime() + ms)
  const evaluate = (ms: number) => evaluateAlerts({ db, now: at(ms), publicUrl: PUBLIC_URL })
  const breach = (ms: number, groups: number, prefix: string) =>
    storeBatch({
      sql: db.sql,
      sourceId,
      sourceLabel: 'orders.dlq',
      rows: Array.from({ length: groups * 60 }, (_, i) =>
        ingestRow({ failedAt: new Date(at(ms).getTime() - i * 50), signature: `v1:${prefix}-${i % groups}`, title: `${prefix}Exception ${i % groups}`, failureKind: 'transient' }),
      ),
    })

  beforeAll(async () => {
    db = await createTestDb()
    sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('orders.dlq') RETURNING id::text`)).rows[0].id
    receiver = await startWebhookReceiver()
    await updateWebhookSettings({ db, input: { allowedHosts: ['127.0.0.1'] }, actor: 'ops' })
    await db.sql.query('INSERT INTO alert_webhooks (url) VALUES ($1)', [receiver.url])
    await db.sql.query(
      `INSERT INTO alert_rules (kind, threshold_per_minute, window_minutes, cooldown_minutes, created_by) VALUES ('group-rate', 5, 5, 30, 'ops')`,
    )
  })
  afterAll(async () => {
    await receiver?.close()
    await db?.drop()
  })

  it('fifteen groups breaching one rule make one POST that lists them all, with links', async () => {
    await breach(1 * MINUTE, 15, 'Storm')
    const { events } = await evaluate(1 * MINUTE)
    expect(events.filter((e) => e.state === 'firing')).toHaveLength(15)
    expect(receiver.bodies).toHaveLength(1)
    const [body] = receiver.bodies
    expect(body.alerts).toHaveLength(15)
    expect(body.alert).toEqual(body.alerts[0])
    const lines = (body.text as string).split('\n')
    expect(lines[0]).toBe('15 error groups over one alert rule\'s threshold:')
    expect(lines.slice(1)).toHaveLength(15)
    for (const e of events) expect(body.text).toContain(`<${PUBLIC_URL}/groups/${e.subject.id}|Open in Lazarus>`)
    // Every event records the one delivery.
    expect(events.every((e) => e.delivery.length === 1 && e.delivery[0].ok)).toBe(true)
  })

  it('a refused digest is retried as one POST, and a single breach is sent as before', async () => {
    await evaluate(40 * MINUTE) // the storm is over: recoveries are recorded, the rule's resolution is sent
    expect(receiver.bodies.at(-1).alert.state).toBe('resolved')
    receiver.answer = 503
    const sent = receiver.bodies.length
    await breach(80 * MINUTE, 3, 'Squall')
    await evaluate(80 * MINUTE)
    expect(receiver.bodies.length - sent).toBe(1)
    expect(receiver.bodies.at(-1).alerts).toHaveLength(3)
    receiver.answer = 200
    await evaluate(80 * MINUTE + 30 * SECOND)
    expect(receiver.requests.slice(sent).map((r) => [r.status, r.body.alerts.length])).toEqual([[503, 3], [200, 3]])
    const { rows } = await db.sql.query<{ next: Date | null }>(`SELECT next_delivery_at AS next FROM alert_events WHERE notified`)
    expect(rows.every((r) => r.next === null)).toBe(true)

    await breach(120 * MINUTE, 1, 'Drizzle')
    await evaluate(120 * MINUTE)
    const single = receiver.bodies.at(-1)
    expect(single.alerts).toHaveLength(1)
    expect(single.text).toMatch(/^Dead letters: “DrizzleException 0” arrives at .*<https:\/\/lazarus\.example\.com\/groups\/\d+\|Open in Lazarus>$/)
  })
})
