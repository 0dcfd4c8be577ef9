import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { callRoute } from '../helpers/call-route'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { evaluateAlerts } from '@/lib/server/engines/alert-evaluator/evaluate-alerts'
import { deliverWebhooks } from '@/lib/server/engines/alert-evaluator/deliver-webhooks'
import { listAlertEvents } from '@/lib/server/alerts/list-alert-events'
import { listAlerts } from '@/lib/server/alerts/list-alerts'
import { createWebhookPolicy, type Resolve } from '@/lib/server/alerts/webhook-policy'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import * as alertsRoute from '@/app/api/alerts/route'
import * as webhooksRoute from '@/app/api/alerts/webhooks/route'
import * as settingsRoute from '@/app/api/settings/webhooks/route'

// Read once, when the test database opens the configuration: the environment's allow-list, as infrastructure as code
// would set it, lets a second receiver on 127.0.0.2 through while 127.0.0.1 depends on the stored allow-list.
const previousEnv = process.env.LAZARUS_WEBHOOK_ALLOWED_HOSTS
process.env.LAZARUS_WEBHOOK_ALLOWED_HOSTS = '127.0.0.2'

const base = 'http://lazarus.test'
const send = (module: Parameters<typeof callRoute>[0], method: 'POST' | 'PUT', path: string, body: unknown) =>
  callRoute(module, method, new Request(`${base}${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }))
const get = (module: Parameters<typeof callRoute>[0], path: string) => callRoute(module, 'GET', new Request(`${base}${path}`))
const addWebhook = (url: string) => send(webhooksRoute, 'POST', '/api/alerts/webhooks', { url })
const allow = (allowedHosts: string[]) => send(settingsRoute, 'PUT', '/api/settings/webhooks', { allowedHosts })

/** Webhooks must not be a port scanner: non-public addresses are refused when saved and on every connection. */
describe('alert webhooks and the internal network', () => {
  let db: TestDb
  let receiver: WebhookReceiver
  let envReceiver: WebhookReceiver
  let now = new Date()
  let n = 0

  /** What a notifying breach leaves for delivery (as alerts-delivery does), delivered by the next evaluation. */
  const alertAndDeliver = async (): Promise<AlertEventDto> => {
    const text = `Dead letters: ssrf check ${++n}`
    now = new Date(now.getTime() + 60_000)
    const { rows } = await db.sql.query<{ id: string }>(
      `INSERT INTO alert_events (kind, state, subject_type, subject_id, subject_label, text, notified, at, next_delivery_at)
       VALUES ('source-rate', 'firing', 'source', '1', 'orders.dlq', $1, true, $2, $2) RETURNING id::text`,
      [text, now],
    )
    await evaluateAlerts({ db, now })
    const { events } = await listAlertEvents({ db, query: { limit: 200 }, includeDeliveryErrors: true })
    return events.find((e) => e.id === rows[0].id)!
  }
  const texts = (r: WebhookReceiver) => r.bodies.map((b: { text: string }) => b.text)

  beforeAll(async () => {
    db = await createTestDb()
    receiver = await startWebhookReceiver('127.0.0.1')
    envReceiver = await startWebhookReceiver('127.0.0.2')
  })
  beforeEach(async () => {
    // Each test starts with no webhook, no allow-list and no earlier alert still due for a retry.
    await db.sql.query('UPDATE alert_events SET next_delivery_at = NULL')
    await db.sql.query('DELETE FROM alert_webhooks')
    await db.sql.query('DELETE FROM webhook_settings')
  })
  afterAll(async () => {
    if (previousEnv === undefined) delete process.env.LAZARUS_WEBHOOK_ALLOWED_HOSTS
    else process.env.LAZARUS_WEBHOOK_ALLOWED_HOSTS = previousEnv
    await receiver?.close()
    await envReceiver?.close()
    await db?.drop()
  })

  it('refuses every loopback, private, link-local, metadata and reserved form at save time with 422 and a message', async () => {
    const port = new URL(receiver.url).port
    const refused: [string, RegExp][] = [
      ['http://127.0.0.1:15672/api/queues', /127\.0\.0\.1 is a loopback address/],
      [`http://0x7f000001:${port}/hook`, /127\.0\.0\.1 is a loopback address/],
      [`http://2130706433:${port}/hook`, /127\.0\.0\.1 is a loopback address/],
      [`http://0177.0.0.1:${port}/hook`, /127\.0\.0\.1 is a loopback address/],
      [`http://127.1:${port}/hook`, /127\.0\.0\.1 is a loopback address/],
      [`http://[::1]:${port}/hook`, /::1 is a loopback address/],
      [`http://[::ffff:127.0.0.1]:${port}/hook`, /127\.0\.0\.1, a loopback address/],
      [`http://[64:ff9b::7f00:1]:${port}/hook`, /127\.0\.0\.1, a loopback address/],
      [`http://localhost:${port}/hook`, /localhost resolves to (127\.0\.0\.1|::1), a loopback address/],
      ['http://10.1.2.3/hooks', /private address/],
      ['http://172.16.0.1/hooks', /private address/],
      ['http://192.168.1.1/hooks', /private address/],
      ['http://100.64.0.1/hooks', /shared \(CGNAT\) address/],
      ['http://[fc00::1]/hooks', /private address/],
      ['http://[fd12:3456::1]/hooks', /private address/],
      ['http://169.254.1.1/hooks', /link-local address/],
      ['http://[fe80::1]/hooks', /link-local address/],
      ['http://169.254.169.254/latest/meta-data/', /cloud metadata address/],
      ['http://[fd00:ec2::254]/latest/meta-data/', /cloud metadata address/],
      ['http://0.0.0.0:3000/api/sources', /unspecified address/],
      ['http://[::]:3000/', /unspecified address/],
      ['http://224.0.0.1/', /multicast address/],
      ['http://255.255.255.255/', /broadcast address/],
      ['http://240.0.0.1/', /reserved address/],
      ['https://user:secret@hooks.example.com/x', /user name or password/],
    ]
    for (const [url, message] of refused) {
      const response = await addWebhook(url)
      expect(response.status, url).toBe(422)
      expect((await response.json()).error.message, url).toMatch(new RegExp(`^webhook URL refused: .*${message.source}`))
    }
    const overview = await (await get(alertsRoute, '/api/alerts')).json()
    expect(overview.webhooks).toEqual([])
  })

  it('delivers to an allow-listed loopback host, from the stored list or the environment; PUT canonicalises entries', async () => {
    expect((await addWebhook(receiver.url)).status).toBe(422)
    const put = await allow([' 127.0.0.1 ', 'Mattermost.Corp.', '10.1.2.3/16'])
    expect(put.status).toBe(200)
    expect(await put.json()).toMatchObject({ allowedHosts: ['127.0.0.1', 'mattermost.corp', '10.1.0.0/16'], environmentAllowedHosts: ['127.0.0.2'], maxWebhooks: 20, updatedBy: expect.any(String) })
    expect(await (await get(settingsRoute, '/api/settings/webhooks')).json()).toMatchObject({ allowedHosts: ['127.0.0.1', 'mattermost.corp', '10.1.0.0/16'] })
    expect((await addWebhook(receiver.url)).status).toBe(201)
    expect((await addWebhook(envReceiver.url)).status).toBe(201) // 127.0.0.2: allowed by LAZARUS_WEBHOOK_ALLOWED_HOSTS
    expect((await addWebhook('http://127.0.0.3/hook')).status).toBe(422) // the rest of 127/8 is not

    const event = await alertAndDeliver()
    expect(event.delivery).toEqual([expect.objectContaining({ url: receiver.url, ok: true, status: 200 }), expect.objectContaining({ url: envReceiver.url, ok: true, status: 200 })])
    expect(texts(receiver)).toContain(event.text)
    expect(texts(envReceiver)).toContain(event.text)

    const bad = await allow(['a.corp', '0177.0.0.1'])
    expect(bad.status).toBe(400)
    expect((await bad.json()).error.message).toMatch(/allowedHosts\.1: write IPv4 addresses as four decimal numbers/)
  })

  it('checks again on every connection: a webhook that may not be reached any more is refused at delivery, and nothing is sent', async () => {
    await allow(['localhost', '127.0.0.1'])
    const port = new URL(receiver.url).port
    const byName = `http://localhost:${port}/hook?by=name`
    const byAddress = receiver.url
    expect((await addWebhook(byName)).status).toBe(201)
    expect((await addWebhook(byAddress)).status).toBe(201)
    // What a database from before this check holds, or what a host looked like when it was saved: nothing checks
    // these rows but delivery.
    const v6 = `http://[::1]:${port}/hook?by=v6`
    const numeric = `http://0x7f000001:${port}/hook?by=numeric`
    await db.sql.query(`INSERT INTO alert_webhooks (url) VALUES ($1), ($2)`, [v6, numeric])

    await allow([])
    const before = receiver.requests.length
    const event = await alertAndDeliver()
    expect(receiver.requests.length).toBe(before)
    expect(event.delivery).toEqual([
      { url: byName, ok: false, status: null, error: expect.stringMatching(/^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address/) },
      { url: byAddress, ok: false, status: null, error: expect.stringMatching(/^refused: 127\.0\.0\.1 is a loopback address/) },
      { url: v6, ok: false, status: null, error: expect.stringMatching(/^refused: ::1 is a loopback address/) },
      { url: numeric, ok: false, status: null, error: expect.stringMatching(/^refused: 127\.0\.0\.1 is a loopback address/) },
    ])

    // Allowed again, the retry goes out: a refusal is a failed delivery like any other.
    await allow(['127.0.0.1', 'localhost'])
    now = new Date(now.getTime() + 60_000)
    await evaluateAlerts({ db, now })
    expect(receiver.requests.length - before).toBe(3) // [::1] stays refused: only 127.0.0.1 is allowed
  })

  it('a name that resolved to a public address when saved and resolves to loopback at delivery is refused (the check is in the connection)', async () => {
    let answers = 0
    // A DNS rebinding name: public for the save-time check, loopback afterwards. It exists in no real DNS, so a
    // connection that reaches the receiver can only have used the policy's own resolution.
    const rebinding: Resolve = async () => [answers++ === 0 ? { address: '93.184.215.14', family: 4 } : { address: '127.0.0.1', family: 4 }]
    const url = `http://hooks.rebind.test:${new URL(receiver.url).port}/hook`
    const policy = createWebhookPolicy({ allowedHosts: [], resolve: rebinding })
    expect(await policy.check(url)).toBeNull()
    const alert: AlertEventDto = {
      id: '1', ruleId: null, kind: 'source-rate', state: 'firing', subject: { type: 'source', id: '1', label: 'orders.dlq' },
      ratePerMinute: 20, thresholdPerMinute: 10, text: 'rebind', notified: true, delivery: [], at: new Date().toISOString(),
    }
    const before = receiver.requests.length
    const [refused] = await deliverWebhooks({ urls: [url], text: 'rebind', alert, policy })
    expect(refused).toEqual({ url, ok: false, status: null, error: expect.stringMatching(/^refused: hooks\.rebind\.test resolves to 127\.0\.0\.1, a loopback address/) })
    expect(receiver.requests.length).toBe(before)

    const allowed = createWebhookPolicy({ allowedHosts: ['hooks.rebind.test'], resolve: rebinding })
    const [delivered] = await deliverWebhooks({ urls: [url], text: 'rebind allowed', alert, policy: allowed })
    expect(delivered).toEqual({ url, ok: true, status: 200, error: null })
    expect(texts(receiver).at(-1)).toBe('rebind allowed')
  })

  it('does not follow redirects', async () => {
    await allow(['127.0.0.1'])
    const redirector: Server = createServer((_request, response) => response.writeHead(307, { location: receiver.url }).end())
    await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/moved`
      expect((await addWebhook(url)).status).toBe(201)
      const before = receiver.requests.length
      const event = await alertAndDeliver()
      expect(event.delivery).toEqual([{ url, ok: false, status: 307, error: 'HTTP 307' }])
      expect(receiver.requests.length).toBe(before)
    } finally {
      await new Promise<void>((resolve) => redirector.close(() => resolve()))
    }
  })

  it('caps the number of webhooks at 20, when adding and when delivering', async () => {
    await allow(['127.0.0.1'])
    for (let i = 1; i <= 20; i++) expect((await addWebhook(`${receiver.url}?n=${i}`)).status).toBe(201)
    const over = await addWebhook(`${receiver.url}?n=21`)
    expect(over.status).toBe(409)
    expect((await over.json()).error.message).toBe('at most 20 webhooks can be configured; remove one before adding another')
    expect((await (await get(alertsRoute, '/api/alerts')).json()).webhooks).toHaveLength(20)

    // A database from before the cap may hold more: only the first 20 are sent to.
    await db.sql.query(`INSERT INTO alert_webhooks (url) SELECT $1 || '?old=' || i FROM generate_series(1, 30) i`, [receiver.url])
    const before = receiver.requests.length
    const event = await alertAndDeliver()
    expect(event.delivery).toHaveLength(20)
    expect(receiver.requests.length - before).toBe(20)
  })

  it('leaves failed deliveries without status and error unless the caller may see them', async () => {
    await allow(['127.0.0.1'])
    expect((await addWebhook(receiver.url)).status).toBe(201)
    await db.sql.query(`INSERT INTO alert_webhooks (url) VALUES ('http://10.1.2.3/hooks')`)
    receiver.answer = 405
    const event = await alertAndDeliver()
    receiver.answer = 200
    expect(event.delivery).toEqual([
      { url: receiver.url, ok: false, status: 405, error: 'HTTP 405' },
      { url: 'http://10.1.2.3/hooks', ok: false, status: null, error: expect.stringMatching(/^refused: 10\.1\.2\.3 is a private address/) },
    ])
    // Without the option (non-admins) the URL is shown as its origin only: a webhook's path is a credential.
    const hidden = [
      { url: `${new URL(receiver.url).origin}/…`, ok: false, status: null, error: null },
      { url: 'http://10.1.2.3/…', ok: false, status: null, error: null },
    ]
    const byDefault = (await listAlertEvents({ db, query: { limit: 200 } })).events.find((e) => e.id === event.id)!
    expect(byDefault.delivery).toEqual(hidden)
    expect((await listAlertEvents({ db, query: { limit: 200 }, includeDeliveryErrors: false })).events.find((e) => e.id === event.id)!.delivery).toEqual(hidden)

    // The firing list (the banner) carries deliveries too.
    const ruleId = (await db.sql.query<{ id: string }>(`INSERT INTO alert_rules (kind, threshold_per_minute, created_by) VALUES ('source-rate', 1, 'ops') RETURNING id::text`)).rows[0].id
    await db.sql.query(`UPDATE alert_events SET rule_id = $1::bigint WHERE id = $2::bigint`, [ruleId, event.id])
    await db.sql.query(`INSERT INTO alert_states (rule_id, subject_key, firing, since) VALUES ($1::bigint, 'source:1', true, now())`, [ruleId])
    expect((await listAlerts({ db })).firing.find((e) => e.id === event.id)!.delivery).toEqual(hidden)
    expect((await listAlerts({ db, includeDeliveryErrors: true })).firing.find((e) => e.id === event.id)!.delivery).toEqual(event.delivery)
    // Accepted deliveries keep their 2xx status either way: it tells nothing about the network.
    await db.sql.query(`DELETE FROM alert_webhooks WHERE url LIKE 'http://10.%'`)
    const accepted = await alertAndDeliver()
    expect((await listAlertEvents({ db, query: { limit: 200 } })).events.find((e) => e.id === accepted.id)!.delivery).toEqual([{ url: `${new URL(receiver.url).origin}/…`, ok: true, status: 200, error: null }])
  })
})
