import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect as baseExpect, type APIRequestContext, type Page } from '@playwright/test'
import { test } from './support/fixtures'
import { pollJson } from './support/api-json'
import amqp from 'amqplib'
import { capture, shot, shots } from './support/screens'
import { sourceQueue } from './support/slots'
import { startWebhookReceiver } from '../helpers/webhook-receiver'

/*
 * Group triage and inflow alerts end to end: an operator acknowledges a group with a note and a ticket link (and
 * the API's validation shows at the field); an alert rule on the e2e source fires once when dead letters arrive
 * faster than its threshold, a webhook receiver on localhost gets exactly one notice, and the header's banner,
 * the firing list and the history show it. The served app evaluates rules every 2 s (tests/e2e/serve.sh).
 */

// Two cores shared with the server, PostgreSQL and RabbitMQ: allow a loaded machine some slack.
const expect = baseExpect.configure({ timeout: 15_000 })

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = sourceQueue()
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const TRIAGE_ERROR = `com.acme.e2e.Triage${RUN}Exception`
const STORM_ERROR = `com.acme.e2e.Storm${RUN}Exception`
const PAGE_ERROR = `com.acme.e2e.Page${RUN}Exception`
const ROUTING_KEY = `R0uting${RUN}K3yForEventsV2x`
const TICKET = `https://tracker.example.com/browse/OPS-${RUN}`
const NOTE = `Stock service team is on it (${RUN}).\nReplay after the 14:00 deploy.`
// A breach needs threshold × window = 10 letters inside the window; the triage test's 2 letters stay well below.
const THRESHOLD = 2
const STORM = 15

type Letter = { body: unknown; headers: Record<string, unknown>; messageId: string }

const letter = (errorType: string, n: number): Letter => ({
  messageId: `${RUN}-${errorType.slice(-20)}-${n}`,
  body: { orderId: `${RUN}-order-${n}` },
  headers: {
    'x-error-type': errorType,
    'x-error-message': `order ${n} of ${RUN} failed`,
    'x-failure-kind': 'transient',
    'x-service': 'orders',
    // Failed now: alert rates count by failure time.
    'x-death': [{ queue: 'orders.work', reason: 'rejected', count: 1, exchange: 'orders', 'routing-keys': ['order.created'], time: { '!': 'timestamp', value: Math.floor(Date.now() / 1000) } }],
  },
})

async function publish(letters: Letter[]) {
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createConfirmChannel()
  await channel.assertQueue(DLQ, { durable: true })
  for (const l of letters) {
    channel.sendToQueue(DLQ, Buffer.from(JSON.stringify(l.body)), { contentType: 'application/json', messageId: l.messageId, headers: l.headers, persistent: true })
  }
  await channel.waitForConfirms()
  await connection.close()
}

async function stored(request: APIRequestContext, q: string): Promise<number> {
  const body = await (await request.get(`/api/messages?q=${encodeURIComponent(q)}&limit=100`)).json()
  return body.messages?.length ?? 0
}

/** Where the page's content starts: it must not move when the header's banner comes and goes. */
const contentTop = async (page: Page) => (await page.locator('main').boundingBox())!.y

test.describe.configure({ mode: 'serial' })

test('alerts page before any rule: calm empty states, no banner', async ({ page }) => {
  await page.goto('/alerts')
  await expect(page.getByRole('heading', { level: 1, name: 'Alerts' })).toBeVisible()
  await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Alerts' })).toHaveAttribute('aria-current', 'page')
  await expect(page.getByTestId('nothing-firing')).toBeVisible()
  await expect(page.getByTestId('no-rules')).toBeVisible()
  await expect(page.getByTestId('no-webhooks')).toBeVisible()
  await expect(page.getByTestId('no-alert-events')).toBeVisible()
  await expect(page.getByTestId('alerts-summary')).toHaveText('0 firing · 0 rules · 0 webhooks')
  await expect(page.getByTestId('alert-banner')).toHaveCount(0)
  await shot(page, 'alerts-empty')
})

test('group triage: status, note and ticket link persist; a bad link shows the API message', async ({ page, request }) => {
  await publish([letter(TRIAGE_ERROR, 1), letter(TRIAGE_ERROR, 2)])
  await expect.poll(() => stored(request, `Triage${RUN}`), { timeout: 30_000 }).toBe(2)

  await page.goto(`/?q=Triage${RUN}`)
  await page.getByRole('table', { name: 'Error groups' }).getByRole('link', { name: new RegExp(`Triage${RUN}Exception`) }).click()
  await expect(page).toHaveURL(/\/groups\/\d+$/)
  const groupId = page.url().split('/').pop()!
  const form = page.getByRole('form', { name: 'Triage' })
  await expect(form.getByLabel('Status')).toHaveValue('open')
  await expect(form.getByRole('button', { name: 'Save' })).toBeDisabled()

  await form.getByLabel('Status').selectOption('acknowledged')
  await form.getByLabel('Note').fill(NOTE)
  await form.getByLabel('Ticket link').fill('OPS-1234 in the tracker')
  await form.getByRole('button', { name: 'Save' }).click()
  // The API's own message, under the ticket field; nothing was saved.
  await expect(form.getByRole('alert')).toHaveText('must be a URL such as https://tracker.example.com/PROJ-123')
  await expect(form.getByLabel('Ticket link')).toHaveAttribute('aria-invalid', 'true')
  expect((await (await request.get(`/api/groups/${groupId}`)).json()).group.status).toBe('open')
  await shot(page, 'group-triage-invalid')

  await form.getByLabel('Ticket link').fill(TICKET)
  await form.getByRole('button', { name: 'Save' }).click()
  await expect(form.getByText('Saved', { exact: true })).toBeVisible()
  await expect(form.getByRole('alert')).toHaveCount(0)
  await expect(form.getByRole('button', { name: 'Save' })).toBeDisabled()

  await page.reload()
  await expect(form.getByLabel('Status')).toHaveValue('acknowledged')
  await expect(form.getByLabel('Note')).toHaveValue(NOTE)
  await expect(form.getByLabel('Ticket link')).toHaveValue(TICKET)
  const ticket = page.getByTestId('ticket-link')
  await expect(ticket).toHaveAttribute('href', TICKET)
  await expect(ticket).toHaveAttribute('rel', 'noopener noreferrer')
  await expect(ticket).toHaveAttribute('target', '_blank')
  await expect(page.locator('header').filter({ has: page.getByRole('heading', { level: 1 }) })).toContainText('acknowledged')
  await shot(page, 'group-triage')

  // Ctrl+Enter in the note saves too; clearing the ticket link sends null.
  await form.getByLabel('Ticket link').fill('')
  await form.getByLabel('Note').press('Control+Enter')
  await expect(form.getByText('Saved', { exact: true })).toBeVisible()
  await expect(ticket).toHaveCount(0)
  expect((await (await request.get(`/api/groups/${groupId}`)).json()).group.ticketUrl).toBeNull()
  await form.getByLabel('Ticket link').fill(TICKET)
  await form.getByRole('button', { name: 'Save' }).click()
  await expect(ticket).toHaveAttribute('href', TICKET)

  // The groups list shows the new status and the ticket, and filters by it.
  await page.goto(`/?q=Triage${RUN}`)
  const row = page.getByRole('table', { name: 'Error groups' }).locator('tbody tr')
  await expect(row).toHaveCount(1)
  await expect(row).toContainText('acknowledged')
  await expect(row.getByRole('link', { name: 'Open ticket' })).toHaveAttribute('href', TICKET)
  await page.getByRole('search', { name: 'Group filters' }).getByLabel('Status').selectOption('open')
  await expect(row).toHaveCount(0)
  await page.getByRole('search', { name: 'Group filters' }).getByLabel('Status').selectOption('acknowledged')
  await expect(row).toHaveCount(1)
  await shot(page, 'groups-triaged')

  // The change is in the audit log, once.
  const audit = await (await request.get(`/api/audit?subjectType=group&subjectId=${groupId}`)).json()
  expect(audit.entries.length).toBeGreaterThanOrEqual(1)
  expect(audit.entries.at(-1).summary).toContain('status open → acknowledged')
})

test('alerts: one webhook notice per breach, shown in the banner, the firing list and the history', async ({ page, request }) => {
  test.setTimeout(120_000)
  const received: { path: string; body: { text: string; alert: { state: string; subject: { label: string }; ratePerMinute: number } } }[] = []
  const receiver: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8')) })
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/${RUN}`

  try {
    await page.goto('/alerts')
    await expect(page.getByTestId('nothing-firing')).toBeVisible()
    const quietTop = await contentTop(page)

    // A webhook: the API refuses what is not http(s), at the field.
    const hookForm = page.getByRole('form', { name: 'Add a webhook' })
    await hookForm.getByLabel('Webhook URL').fill('ftp://127.0.0.1/hooks')
    await hookForm.getByRole('button', { name: 'Add webhook' }).click()
    await expect(hookForm.getByRole('alert')).toHaveText('must be an http(s) URL')
    await hookForm.getByLabel('Webhook URL').fill(hook)
    await hookForm.getByRole('button', { name: 'Add webhook' }).click()
    const webhooks = page.getByRole('table', { name: 'Webhooks' })
    await expect(webhooks.locator('tbody tr')).toHaveCount(1)
    await expect(webhooks).toContainText(hook)
    await expect(hookForm.getByLabel('Webhook URL')).toHaveValue('')

    // A rule: required threshold (the form), then the API's range check at the field.
    const ruleForm = page.getByRole('form', { name: 'Add an alert rule' })
    await expect(ruleForm.getByLabel('Source', { exact: true })).toContainText(DLQ)
    await ruleForm.getByLabel('Source', { exact: true }).selectOption({ label: DLQ })
    await ruleForm.getByRole('button', { name: 'Add rule' }).click()
    await expect(ruleForm.getByRole('alert')).toHaveText('a threshold is required')
    await ruleForm.getByLabel('Threshold (per min)').fill('0')
    await ruleForm.getByLabel('Window (min)').fill('0')
    await ruleForm.getByRole('button', { name: 'Add rule' }).click()
    await expect(ruleForm.getByRole('alert').filter({ hasText: '>0' })).toHaveText('Too small: expected number to be >0')
    await expect(ruleForm.getByRole('alert').filter({ hasText: '>=1' })).toHaveText('Too small: expected number to be >=1')
    await shot(page, 'alerts-rule-invalid')
    await ruleForm.getByLabel('Threshold (per min)').fill(String(THRESHOLD))
    await ruleForm.getByLabel('Window (min)').fill('5')
    await ruleForm.getByLabel('Cool-down (min)').fill('30')
    await ruleForm.getByRole('button', { name: 'Add rule' }).click()

    const rules = page.getByRole('table', { name: 'Alert rules' })
    const rule = rules.locator('tbody tr[data-kind="source-rate"]')
    await expect(rule).toHaveCount(1)
    await expect(rule).toContainText(DLQ)
    await expect(rule).toContainText(`≥ ${THRESHOLD}/min`)
    await expect(rule).toContainText('5 min')
    await expect(rule).toContainText('30 min')
    await expect(ruleForm.getByRole('alert')).toHaveCount(0)

    // The switch disables and re-enables it, through the API.
    const enabled = rule.getByRole('switch')
    await expect(enabled).toHaveAttribute('aria-checked', 'true')
    await enabled.click()
    await expect(enabled).toHaveAttribute('aria-checked', 'false')
    await expect.poll(async () => (await pollJson(request, '/api/alerts'))?.rules?.[0]?.enabled).toBe(false)
    await enabled.press('Space')
    await expect(enabled).toHaveAttribute('aria-checked', 'true')
    await expect.poll(async () => (await pollJson(request, '/api/alerts'))?.rules?.[0]?.enabled).toBe(true)
    expect(received).toHaveLength(0)

    // A storm: 15 more dead letters within the window, over 3/min against a threshold of 2/min.
    await publish(Array.from({ length: STORM }, (_, i) => letter(STORM_ERROR, i + 1)))
    await expect.poll(() => received.length, { timeout: 45_000 }).toBe(1)
    const notice = received[0]!
    expect(notice.path).toBe(`/hooks/${RUN}`)
    expect(notice.body.alert.state).toBe('firing')
    expect(notice.body.alert.subject.label).toBe(DLQ)
    expect(notice.body.alert.ratePerMinute).toBeGreaterThanOrEqual(THRESHOLD)
    expect(notice.body.text).toContain(DLQ)
    expect(notice.body.text).toContain(`threshold ${THRESHOLD}/min`)

    // The page shows it: the banner, the firing list, the rule's count and the history with the delivery.
    const banner = page.getByTestId('alert-banner')
    await expect(banner).toBeVisible()
    await expect(banner).toContainText(DLQ)
    expect(await contentTop(page)).toBe(quietTop)
    const firing = page.getByRole('table', { name: 'Firing now' })
    await expect(firing.locator('tbody tr')).toHaveCount(1)
    await expect(firing).toContainText(DLQ)
    await expect(firing).toContainText(`≥ ${THRESHOLD}/min`)
    await expect(rule.getByTestId('rule-firing')).toHaveText('1')
    const history = page.getByRole('table', { name: 'Alert history' })
    const event = history.locator('tbody tr[data-state="firing"]')
    await expect(event).toHaveCount(1)
    await expect(event).toContainText(DLQ)
    await expect(event.getByTestId('notified')).toContainText('yes')
    await expect(event.getByTestId('delivery')).toContainText('200')
    await expect(page.getByTestId('alerts-summary')).toHaveText('1 firing · 1 rule · 1 webhook')
    await event.getByRole('button', { name: 'Show details' }).click()
    await expect(history).toContainText(notice.body.text)
    await expect(history).toContainText(hook)
    await shots(page, 'alerts-firing')

    // Still in breach two evaluations later, nothing more is sent. The rule says when it was last checked; an
    // evaluation delivers before the next one starts, so two more checks mean one whole evaluation went by.
    const checkedAt = async () => ((await pollJson(request, '/api/alerts'))?.rules?.[0]?.evaluatedAt as string | undefined) ?? ''
    const seen = new Set([await checkedAt()])
    await expect.poll(async () => seen.add(await checkedAt()).size, { timeout: 30_000 }).toBeGreaterThanOrEqual(3)
    expect(received).toHaveLength(1)
    await expect(rule.getByTestId('rule-checked')).toContainText(/ago|now/)

    // Every page shows the banner in the header, without moving the content; it links to /alerts.
    await page.goto('/messages')
    await expect(banner).toBeVisible()
    await expect(banner).toHaveAttribute('href', '/alerts')
    expect(await contentTop(page)).toBe(quietTop)
    await page.evaluate(() => window.scrollTo(0, 0))
    await capture(page.locator('header.sticky'), 'alert-banner')
    await banner.click()
    await expect(page).toHaveURL(/\/alerts$/)

    // Deleting the rule asks first (Enter confirms); its breach stops showing, its history stays.
    await rule.getByRole('button', { name: /^Delete rule/ }).click()
    const dialog = page.getByRole('dialog', { name: 'Delete this alert rule?' })
    await expect(dialog).toContainText(DLQ)
    await shot(page, 'alerts-delete-rule')
    await page.keyboard.press('Enter')
    await expect(dialog).toHaveCount(0)
    await expect(rules.locator('tbody tr')).toHaveCount(0)
    await expect(page.getByTestId('nothing-firing')).toBeVisible()
    await expect(banner).toHaveCount(0)
    await expect(event).toHaveCount(1)

    await webhooks.getByRole('button', { name: `Remove webhook ${hook}` }).click()
    const removeDialog = page.getByRole('dialog', { name: 'Remove this webhook?' })
    await expect(removeDialog).toContainText(hook)
    await shot(page, 'alerts-remove-webhook')
    await removeDialog.getByRole('button', { name: 'Remove webhook' }).click()
    await expect(webhooks.locator('tbody tr')).toHaveCount(0)
    expect(received).toHaveLength(1)
  } finally {
    // Leave no rule or webhook behind for the other specs, whatever happened above.
    const overview = await (await request.get('/api/alerts')).json()
    for (const r of overview.rules ?? []) await request.delete(`/api/alerts/rules/${r.id}`)
    for (const w of overview.webhooks ?? []) await request.delete(`/api/alerts/webhooks/${w.id}`)
    await new Promise<void>((resolve) => receiver.close(() => resolve()))
  }
})

/*
 * Paging, after the walk above (the empty-state test needs an empty history): an admin adds a PagerDuty webhook in the
 * form (format, routing key) and the table shows the key's last four characters only; a one-minute rule pages through
 * it, and once the source has been quiet for the window the rule resolves by itself: the receiver gets `resolve` with
 * the trigger's dedup key and the history shows the resolution.
 */
test('a PagerDuty webhook pages once, and the page resolves itself when the rule is quiet', async ({ page, request }) => {
  test.setTimeout(180_000)
  type PagerDutyEvent = { routing_key: string; event_action: 'trigger' | 'resolve'; dedup_key: string; payload?: { summary: string; severity: string } }
  const receiver = await startWebhookReceiver()
  // PagerDuty's Events API answers 202 Accepted.
  receiver.answer = 202
  const received = receiver.bodies as PagerDutyEvent[]
  const url = receiver.url

  try {
    await page.goto('/alerts')
    await expect(page.getByTestId('no-webhooks')).toBeVisible()
    const form = page.getByRole('form', { name: 'Add a webhook' })
    // Chosen again until it holds: a choice made before the page hydrates is reset by React.
    await expect(async () => {
      await form.getByLabel('Format').selectOption({ label: 'PagerDuty' })
      await expect(form.getByLabel('Routing key')).toBeVisible({ timeout: 1_000 })
    }).toPass()
    await expect(form.getByLabel('Events API URL (optional)')).toHaveAttribute('placeholder', 'https://events.pagerduty.com/v2/enqueue')
    // The routing key is required, and checked at the field.
    await form.getByLabel('Routing key').fill('short')
    await form.getByLabel('Events API URL (optional)').fill(url)
    await form.getByRole('button', { name: 'Add webhook' }).click()
    await expect(form.getByRole('alert')).toContainText('Events API v2 integration key')
    await shots(page, 'alerts-paging-form-invalid')
    await form.getByLabel('Routing key').fill(ROUTING_KEY)
    await form.getByRole('button', { name: 'Add webhook' }).click()
    const webhooks = page.getByRole('table', { name: 'Webhooks' })
    await expect(webhooks.locator('tbody tr')).toHaveCount(1)
    await expect(webhooks.getByTestId('webhook-format')).toHaveText('PagerDuty')
    await expect(webhooks.getByTestId('routing-key-hint')).toHaveText(`key ••••${ROUTING_KEY.slice(-4)}`)
    await expect(page.locator('body')).not.toContainText(ROUTING_KEY)

    const sources = await (await request.get('/api/sources')).json()
    const sourceId = sources.sources.find((s: { queue: string }) => s.queue === DLQ).id
    const created = await request.post('/api/alerts/rules', { data: { kind: 'source-rate', sourceId, thresholdPerMinute: 2, windowMinutes: 1, cooldownMinutes: 0 } })
    expect(created.status()).toBe(201)

    await publish(Array.from({ length: 6 }, (_, i) => letter(PAGE_ERROR, i + 1)))
    await expect.poll(() => received.map((e) => e.event_action), { timeout: 45_000 }).toEqual(['trigger'])
    expect(received[0]).toMatchObject({ routing_key: ROUTING_KEY, payload: { severity: 'error' } })
    expect(received[0].payload?.summary).toContain(DLQ)

    // Quiet for the one-minute window: the rule resolves, once, with the trigger's dedup key.
    await expect.poll(() => received.map((e) => e.event_action), { timeout: 120_000, intervals: [1_000] }).toEqual(['trigger', 'resolve'])
    expect(received[1]).toEqual({ routing_key: ROUTING_KEY, event_action: 'resolve', dedup_key: received[0].dedup_key })

    await page.reload()
    const history = page.getByRole('table', { name: 'Alert history' })
    const resolved = history.locator('tbody tr[data-state="resolved"]')
    await expect(resolved).toHaveCount(1)
    await expect(resolved).toContainText(`dead letters of ${DLQ} over 2/min`)
    await expect(resolved.getByTestId('delivery')).toContainText('202')
    await expect(page.getByTestId('alert-banner')).toHaveCount(0)
    await shots(page, 'alerts-paging-resolved')
  } finally {
    // Leave no rule or webhook behind for the other specs, whatever happened above.
    const overview = await (await request.get('/api/alerts')).json()
    for (const r of overview.rules ?? []) await request.delete(`/api/alerts/rules/${r.id}`)
    for (const w of overview.webhooks ?? []) await request.delete(`/api/alerts/webhooks/${w.id}`)
    await receiver.close()
  }
})
