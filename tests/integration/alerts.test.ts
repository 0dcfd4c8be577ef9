import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH } from '../helpers/auth'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { ingestRow } from '../helpers/ingest-row'
import { evaluateAlerts } from '@/lib/server/engines/alert-evaluator/evaluate-alerts'
import { updateWebhookSettings } from '@/lib/server/alerts/webhook-settings'
import * as alertsRoute from '@/app/api/alerts/route'
import * as eventsRoute from '@/app/api/alerts/events/route'
import * as rulesRoute from '@/app/api/alerts/rules/route'
import * as ruleRoute from '@/app/api/alerts/rules/[id]/route'
import * as webhooksRoute from '@/app/api/alerts/webhooks/route'

const MINUTE = 60_000
const row = (failedAt: Date, signature = 'v1:alert-storm', title = 'StormException: too many') =>
  ingestRow({ failedAt, signature, title, errorType: 'com.acme.StormException', errorMessage: 'too many', failureKind: 'transient' })

const post = (handler: typeof rulesRoute.POST, body: unknown) =>
  handler(new Request('http://lazarus.test/api', { method: 'POST', headers: { 'content-type': 'application/json', ...ADMIN_AUTH }, body: JSON.stringify(body) }), { params: Promise.resolve({}) })

describe('inflow alerts', () => {
  let db: TestDb
  let sourceId: string
  let receiver: WebhookReceiver
  const t0 = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 60 * MINUTE)
  const at = (minutes: number) => new Date(t0.getTime() + minutes * MINUTE)
  const store = (minute: number, count: number, signature?: string, title?: string) =>
    storeBatch({ sql: db.sql, sourceId, sourceLabel: 'orders.dlq', rows: Array.from({ length: count }, (_, i) => row(new Date(at(minute).getTime() - i * 100), signature, title)) })
  const evaluate = (minute: number) => evaluateAlerts({ db, now: at(minute), publicUrl: 'https://lazarus.example.com' })

  beforeAll(async () => {
    db = await createTestDb()
    sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('orders.dlq') RETURNING id::text`)).rows[0].id
    receiver = await startWebhookReceiver()
    // The receiver listens on loopback, which webhooks reach only when allow-listed (as for an internal receiver).
    await updateWebhookSettings({ db, input: { allowedHosts: ['127.0.0.1'] }, actor: 'ops' })
    const { url } = receiver
    expect((await post(webhooksRoute.POST, { url })).status).toBe(201)
    const rule = await post(rulesRoute.POST, { kind: 'source-rate', sourceId, thresholdPerMinute: 10, windowMinutes: 5, cooldownMinutes: 30 })
    expect(rule.status).toBe(201)
    expect(await rule.json()).toMatchObject({ kind: 'source-rate', source: { id: sourceId, queue: 'orders.dlq' }, thresholdPerMinute: 10, createdBy: 'LAZARUS_ADMIN_TOKEN' })
  })
  afterAll(async () => {
    await receiver?.close()
    await db?.drop()
  })

  it('a breach is sent once, with a Slack-compatible text, however often it is evaluated', async () => {
    await store(1, 30) // 6/min over 5 min: below 10
    await evaluate(2)
    expect(receiver.bodies).toHaveLength(0)
    await store(2, 40) // 70 in the window: 14/min
    await evaluate(2)
    await evaluate(3)
    await store(3, 50)
    await evaluate(4)
    expect(receiver.bodies).toHaveLength(1)
    expect(receiver.bodies[0].text).toMatch(/orders\.dlq receives 14\/min over the last 5 min \(threshold 10\/min\)/)
    expect(receiver.bodies[0].text).toContain('<https://lazarus.example.com/messages?source=')
    expect(receiver.bodies[0].alert).toMatchObject({ state: 'firing', subject: { type: 'source', label: 'orders.dlq' }, ratePerMinute: 14, notified: true })
    const overview = await (await alertsRoute.GET(new Request('http://lazarus.test/api/alerts', { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })).json()
    expect(overview.firing).toHaveLength(1)
    expect(overview.rules[0].firing).toBe(1)
  })

  it('a recovery is recorded, the quiet rule resolves once (sent), and a new breach inside the cool-down stays quiet', async () => {
    await evaluate(20) // nothing in the last 5 minutes: the source recovers and the rule resolves
    expect(receiver.bodies).toHaveLength(2)
    expect(receiver.bodies[1].alert).toMatchObject({ state: 'resolved', subject: { type: 'rule' } })
    expect(receiver.bodies[1].text).toMatch(/^Resolved: dead letters of orders\.dlq over 10\/min: quiet for 5 min\./)
    await evaluate(21)
    await store(24, 80)
    await evaluate(25) // breach again, 20 minutes after the notification: inside the 30-minute cool-down
    expect(receiver.bodies).toHaveLength(2)
    const history = await (await eventsRoute.GET(new Request('http://lazarus.test/api/alerts/events', { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })).json()
    expect(history.events.map((e: any) => [e.state, e.notified])).toEqual([['firing', false], ['resolved', true], ['recovered', false], ['firing', true]])
  })

  it('after the cool-down a new breach is sent again; a firing nobody was told of resolves silently', async () => {
    await evaluate(40) // recovers; the quiet breach of minute 25 opened no incident, so nothing resolves
    expect(receiver.bodies).toHaveLength(2)
    await store(44, 80)
    await evaluate(45)
    expect(receiver.bodies).toHaveLength(3)
    expect(receiver.bodies[2].alert.state).toBe('firing')
  })

  it('a new error group is announced once', async () => {
    const rule = await post(rulesRoute.POST, { kind: 'new-group' })
    expect(rule.status).toBe(201)
    await store(46, 1, 'v1:alert-brand-new', 'BrandNewException: first of its kind')
    await evaluate(47)
    await evaluate(48)
    const announcements = receiver.bodies.filter((r) => r.alert.kind === 'new-group')
    expect(announcements).toHaveLength(1)
    expect(announcements[0].text).toMatch(/New error group in orders\.dlq: “BrandNewException: first of its kind”/)
  })

  it('a disabled rule never fires; bad rules are refused with a message', async () => {
    const overview = await (await alertsRoute.GET(new Request('http://lazarus.test/api/alerts', { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })).json()
    const sourceRule = overview.rules.find((r: any) => r.kind === 'source-rate')
    await evaluate(70) // both rules are quiet by now and resolve
    const patched = await ruleRoute.PATCH(new Request('http://x', { method: 'PATCH', body: JSON.stringify({ enabled: false }), headers: ADMIN_AUTH }), { params: Promise.resolve({ id: sourceRule.id }) })
    expect((await patched.json()).enabled).toBe(false)
    const before = receiver.bodies.length
    await store(80, 200)
    await evaluate(80)
    expect(receiver.bodies.length).toBe(before)
    for (const [body, message] of [
      [{ kind: 'source-rate', thresholdPerMinute: -1 }, /thresholdPerMinute/],
      [{ kind: 'source-rate', thresholdPerMinute: 5, sourceId: '999999' }, /does not exist/],
      [{ kind: 'flood' }, /kind/],
    ] as const) {
      const response = await post(rulesRoute.POST, body)
      expect(response.status).toBeGreaterThanOrEqual(400)
      expect(response.status).toBeLessThan(500)
      expect((await response.json()).error.message).toMatch(message)
    }
    expect((await post(webhooksRoute.POST, { url: 'file:///etc/passwd' })).status).toBe(400)
  })
})
