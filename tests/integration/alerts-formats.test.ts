import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ADMIN_AUTH } from '../helpers/auth'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { ingestRow } from '../helpers/ingest-row'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { evaluateAlerts } from '@/lib/server/engines/alert-evaluator/evaluate-alerts'
import { updateWebhookSettings } from '@/lib/server/alerts/webhook-settings'
import * as alertsRoute from '@/app/api/alerts/route'
import * as eventsRoute from '@/app/api/alerts/events/route'
import * as rulesRoute from '@/app/api/alerts/rules/route'
import * as webhooksRoute from '@/app/api/alerts/webhooks/route'

const MINUTE = 60_000
const PUBLIC_URL = 'https://lazarus.example.com'
const ROUTING_KEY = 'R0UT1NGk3yOfAnEventsV2Integr4t1'

/*
 * The receivers check each provider's payload against what its documentation requires, written here as strict zod
 * schemas (zod is the codebase's validator; the providers publish field tables, not JSON Schemas Lazarus could load):
 */

// PagerDuty Events API v2, "Send an alert event": routing_key, event_action (trigger | acknowledge | resolve),
// dedup_key (≤ 255, required to resolve); a trigger's payload needs summary (≤ 1024), source and severity
// (critical | error | warning | info); timestamp is ISO 8601; links are {href, text}.
const pagerDutyTrigger = z.object({
  routing_key: z.string().length(ROUTING_KEY.length),
  event_action: z.literal('trigger'),
  dedup_key: z.string().min(1).max(255),
  payload: z.object({
    summary: z.string().min(1).max(1024),
    source: z.string().min(1),
    severity: z.enum(['critical', 'error', 'warning', 'info']),
    timestamp: z.iso.datetime().optional(),
    component: z.string().optional(),
    group: z.string().optional(),
    class: z.string().optional(),
    custom_details: z.record(z.string(), z.unknown()).optional(),
  }).strict(),
  client: z.string().optional(),
  client_url: z.url().optional(),
  links: z.array(z.object({ href: z.url(), text: z.string() }).strict()).optional(),
  images: z.array(z.object({ src: z.url(), href: z.url().optional(), alt: z.string().optional() })).optional(),
}).strict()
const pagerDutyResolve = z.object({ routing_key: z.string(), event_action: z.literal('resolve'), dedup_key: z.string().min(1).max(255) }).strict()

// Slack Block Kit in an incoming-webhook message: `text` is the notification fallback; at most 50 blocks; header
// text is plain_text ≤ 150; section text ≤ 3000; context ≤ 10 elements; actions ≤ 25 elements; a button's text is
// plain_text ≤ 75, its url ≤ 3000, its style primary or danger.
const plainText = (max: number) => z.object({ type: z.literal('plain_text'), text: z.string().min(1).max(max), emoji: z.boolean().optional() }).strict()
const textObject = (max: number) => z.union([plainText(max), z.object({ type: z.literal('mrkdwn'), text: z.string().min(1).max(max), verbatim: z.boolean().optional() }).strict()])
const slackBlock = z.discriminatedUnion('type', [
  z.object({ type: z.literal('header'), text: plainText(150), block_id: z.string().max(255).optional() }).strict(),
  z.object({ type: z.literal('section'), text: textObject(3000), block_id: z.string().max(255).optional() }).strict(),
  z.object({ type: z.literal('context'), elements: z.array(textObject(3000)).min(1).max(10) }).strict(),
  z.object({
    type: z.literal('actions'),
    elements: z.array(z.object({ type: z.literal('button'), text: plainText(75), url: z.url().max(3000), style: z.enum(['primary', 'danger']).optional() }).strict()).min(1).max(25),
  }).strict(),
])
const slackMessage = z.object({ text: z.string().min(1), blocks: z.array(slackBlock).min(1).max(50) }).strict()

// Microsoft Teams: a `message` whose attachments carry an Adaptive Card (contentType application/vnd.microsoft.card.adaptive);
// the card's `type` is AdaptiveCard, `version` 1.5 and `body` a list of elements, each with a `type`.
type CardElement = { type: string; items?: CardElement[] }
const cardElement: z.ZodType<CardElement> = z.lazy(() =>
  z.looseObject({ type: z.enum(['TextBlock', 'FactSet', 'Container', 'ColumnSet', 'Image', 'ActionSet']), items: z.array(cardElement).optional() }),
)
const teamsMessage = z.object({
  type: z.literal('message'),
  attachments: z.array(z.object({
    contentType: z.literal('application/vnd.microsoft.card.adaptive'),
    contentUrl: z.null().optional(),
    content: z.looseObject({
      $schema: z.literal('http://adaptivecards.io/schemas/adaptive-card.json').optional(),
      type: z.literal('AdaptiveCard'),
      version: z.literal('1.5'),
      body: z.array(cardElement).min(1),
      actions: z.array(z.object({ type: z.literal('Action.OpenUrl'), title: z.string().min(1), url: z.url() }).strict()).optional(),
    }),
  }).strict()).length(1),
}).strict()

const post = (handler: typeof webhooksRoute.POST, body: unknown) =>
  handler(new Request('http://lazarus.test/api', { method: 'POST', headers: { 'content-type': 'application/json', ...ADMIN_AUTH }, body: JSON.stringify(body) }), { params: Promise.resolve({}) })
const getJson = async (handler: typeof alertsRoute.GET, path: string) => (await handler(new Request(`http://lazarus.test${path}`, { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })).json()

describe('webhook formats and resolution', () => {
  let db: TestDb
  let sourceId: string
  const receivers: Record<'generic' | 'slack' | 'teams' | 'pagerduty', WebhookReceiver> = {} as never
  const t0 = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 3 * 60 * MINUTE)
  const at = (ms: number) => new Date(t0.getTime() + ms)
  const evaluate = (ms: number) => evaluateAlerts({ db, now: at(ms), publicUrl: PUBLIC_URL })
  const breach = (ms: number, groups: number, prefix: string) =>
    storeBatch({
      sql: db.sql,
      sourceId,
      sourceLabel: 'orders.dlq',
      rows: Array.from({ length: groups * 30 }, (_, i) =>
        ingestRow({
          failedAt: new Date(at(ms).getTime() - i * 50), signature: `v1:${prefix}-${i % groups}`, title: `${prefix}Exception <@channel> ${i % groups}`, failureKind: 'transient',
          topFrames: [`com.acme.orders.Checkout.pay(Checkout.java:${40 + (i % groups)})`, 'com.acme.orders.Api.handle(Api.java:12)'],
        }),
      ),
    })
  const counts = () => Object.fromEntries(Object.entries(receivers).map(([format, r]) => [format, r.bodies.length]))

  beforeAll(async () => {
    db = await createTestDb()
    sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('orders.dlq') RETURNING id::text`)).rows[0].id
    await updateWebhookSettings({ db, input: { allowedHosts: ['127.0.0.1'] }, actor: 'ops' })
    for (const format of ['generic', 'slack', 'teams', 'pagerduty'] as const) {
      receivers[format] = await startWebhookReceiver()
      const body = format === 'generic' ? { url: receivers[format].url } : { format, url: receivers[format].url, ...(format === 'pagerduty' ? { routingKey: ROUTING_KEY } : {}) }
      expect((await post(webhooksRoute.POST, body)).status).toBe(201)
    }
    expect((await post(rulesRoute.POST, { kind: 'group-rate', thresholdPerMinute: 3, windowMinutes: 5, cooldownMinutes: 30 })).status).toBe(201)
  })
  afterAll(async () => {
    for (const r of Object.values(receivers)) await r?.close()
    await db?.drop()
  })

  it('refuses a PagerDuty webhook without a routing key, and never shows a routing key back', async () => {
    const missing = await post(webhooksRoute.POST, { format: 'pagerduty' })
    expect(missing.status).toBe(400)
    expect((await missing.json()).error.message).toMatch(/routingKey/)
    expect((await post(webhooksRoute.POST, { format: 'slack', url: receivers.slack.url, routingKey: ROUTING_KEY })).status).toBe(400)
    expect((await post(webhooksRoute.POST, { format: 'email', url: receivers.slack.url })).status).toBe(400)
    const overview = await getJson(alertsRoute.GET, '/api/alerts')
    expect(overview.webhooks.map((w: { format: string; routingKeyHint: string | null }) => [w.format, w.routingKeyHint])).toEqual([
      ['generic', null], ['slack', null], ['teams', null], ['pagerduty', `••••${ROUTING_KEY.slice(-4)}`],
    ])
    expect(JSON.stringify(overview)).not.toContain(ROUTING_KEY)
  })

  it('a breach reaches each webhook once, in its format, valid by the provider’s documented fields', async () => {
    await breach(1 * MINUTE, 3, 'Checkout')
    const { events } = await evaluate(1 * MINUTE)
    expect(events.filter((e) => e.state === 'firing')).toHaveLength(3)
    expect(counts()).toEqual({ generic: 1, slack: 1, teams: 1, pagerduty: 1 })

    const generic = receivers.generic.bodies[0]
    expect(Object.keys(generic).sort()).toEqual(['alert', 'alerts', 'text'])
    expect(generic.alerts).toHaveLength(3)

    const slack = slackMessage.parse(receivers.slack.bodies[0])
    const slackText = JSON.stringify(slack.blocks)
    expect(slack.text).toMatch(/^3 error groups over one alert rule's threshold:/)
    // The title's `<@channel>` cannot mention anyone: Slack's controls are escaped.
    expect(slackText).toContain('CheckoutException &lt;@channel&gt; 0')
    expect(slackText).not.toContain('<@channel>')
    expect(slackText).toContain('30 messages')
    expect(slackText).toContain('com.acme.orders.Checkout.pay(Checkout.java:40)')
    expect(slackText).toMatch(/<https:\/\/lazarus\.example\.com\/groups\/\d+\|CheckoutException/)
    expect(slack.blocks.find((b) => b.type === 'actions')).toMatchObject({ elements: [{ url: `${PUBLIC_URL}/alerts` }] })

    const teams = teamsMessage.parse(receivers.teams.bodies[0])
    const card = JSON.stringify(teams.attachments[0].content)
    expect(card).toContain('com.acme.orders.Checkout.pay')
    expect(card).toContain(`${PUBLIC_URL}/groups/`)

    const page = pagerDutyTrigger.parse(receivers.pagerduty.bodies[0])
    expect(page).toMatchObject({ routing_key: ROUTING_KEY, event_action: 'trigger', payload: { severity: 'error', source: 'lazarus.example.com' } })
    expect(page.payload.summary).toMatch(/^3 error groups over one alert rule's threshold/)
    expect(page.links).toContainEqual({ href: `${PUBLIC_URL}/alerts`, text: 'Lazarus alert history' })

    // Still in breach: nothing more is sent, to anyone.
    await evaluate(2 * MINUTE)
    expect(counts()).toEqual({ generic: 1, slack: 1, teams: 1, pagerduty: 1 })
  })

  it('a rule quiet for its window resolves once, to every webhook: PagerDuty resolves the same dedup key', async () => {
    // Two evaluations at once, then more: one resolution is recorded and sent.
    await Promise.all([evaluate(20 * MINUTE), evaluate(20 * MINUTE)])
    await evaluate(21 * MINUTE)
    await evaluate(30 * MINUTE)
    expect(counts()).toEqual({ generic: 2, slack: 2, teams: 2, pagerduty: 2 })

    const resolve = pagerDutyResolve.parse(receivers.pagerduty.bodies[1])
    expect(resolve.dedup_key).toBe(receivers.pagerduty.bodies[0].dedup_key)
    expect(resolve.routing_key).toBe(ROUTING_KEY)
    expect(receivers.generic.bodies[1].alert).toMatchObject({ state: 'resolved', subject: { type: 'rule' }, notified: true })
    expect(receivers.generic.bodies[1].text).toMatch(/^Resolved: any error group over 3\/min: quiet for 5 min\./)
    const slack = slackMessage.parse(receivers.slack.bodies[1])
    expect(slack.blocks[0]).toMatchObject({ type: 'header', text: { text: '✅ Resolved: Lazarus alert' } })
    const teams = teamsMessage.parse(receivers.teams.bodies[1])
    expect(JSON.stringify(teams)).toContain('Resolved: Lazarus alert')

    const history = await getJson(eventsRoute.GET, '/api/alerts/events?limit=200')
    const resolutions = history.events.filter((e: { state: string }) => e.state === 'resolved')
    expect(resolutions).toHaveLength(1)
    expect(resolutions[0].delivery.map((d: { ok: boolean }) => d.ok)).toEqual([true, true, true, true])
    expect(history.events.filter((e: { state: string }) => e.state === 'recovered')).toHaveLength(3)
  })

  it('a rule for one group pages under that group’s key; a new breach opens a new incident under it', async () => {
    const { rows } = await db.sql.query<{ id: string }>(`SELECT id::text FROM error_groups WHERE title LIKE 'CheckoutException%0'`)
    expect((await post(rulesRoute.POST, { kind: 'group-rate', groupId: rows[0].id, thresholdPerMinute: 3, windowMinutes: 5, cooldownMinutes: 0 })).status).toBe(201)
    await breach(60 * MINUTE, 1, 'Checkout')
    await evaluate(60 * MINUTE)
    const pages = receivers.pagerduty.bodies.slice(2)
    expect(pages.map((p) => p.event_action)).toEqual(['trigger', 'trigger'])
    const keys = pages.map((p) => p.dedup_key as string)
    expect(keys.some((k) => k.endsWith(`/group/${rows[0].id}`))).toBe(true)
    expect(new Set(keys).size).toBe(2)
    await evaluate(90 * MINUTE)
    const resolved = receivers.pagerduty.bodies.slice(4)
    expect(resolved.map((p) => p.event_action)).toEqual(['resolve', 'resolve'])
    expect(new Set(resolved.map((p) => p.dedup_key))).toEqual(new Set(keys))
  })
})
