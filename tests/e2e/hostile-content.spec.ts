import { expect as baseExpect, type APIRequestContext, type Page } from '@playwright/test'
import { test } from './support/fixtures'
import { pollJson } from './support/api-json'
import amqp from 'amqplib'
import { shot } from './support/screens'
import { sourceQueue } from './support/slots'

/*
 * Message content is untrusted: bodies, headers and error texts full of markup, event handlers, terminal
 * escapes, direction overrides and one 5,000-character token go through every view. Nothing may run, and
 * nothing may widen the page.
 */

// Two cores shared with the server, PostgreSQL and RabbitMQ: allow a loaded machine some slack.
const expect = baseExpect.configure({ timeout: 15_000 })

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = sourceQueue()
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')

const SCRIPT = '<script>window.__pwned = true; alert("script")</script>'
const IMG = '<img src=x onerror="window.__pwned = true; alert(\'img\')">'
const HTML = '<b>bold</b><a href="javascript:window.__pwned=true">link</a><iframe srcdoc="<script>parent.__pwned=true</script>"></iframe><style>*{display:none}</style>'
const ANSI = '\x1b[31mRED\x1b[0m \x1b]8;;http://evil.example\x07osc-link\x1b]8;;\x07'
const BIDI = 'user\u202Egnp.exe'
const LONG = 'W'.repeat(5000)

const letters: { body: Buffer; contentType: string; headers: Record<string, unknown>; props?: Record<string, string> }[] = [
  {
    contentType: 'application/json',
    body: Buffer.from(
      JSON.stringify({
        orderId: `${RUN}-${IMG}`,
        note: `${SCRIPT}${IMG}`,
        html: HTML,
        ansi: ANSI,
        bidi: BIDI,
        long: LONG,
        [`${IMG}key`]: 'a hostile key',
        nested: { deeper: [SCRIPT, { long: LONG }] },
      }),
    ),
    headers: {
      'x-error-type': `com.evil.Hostile${RUN}Exception`,
      'x-error-message': `${RUN} ${SCRIPT} ${IMG} ${ANSI} ${BIDI} ${LONG}`,
      'x-error-stack': `com.evil.Hostile${RUN}Exception: ${ANSI}\n    at <script>evil()</script>(${IMG})\n    at ${LONG}`,
      'x-service': '<b>svc</b>',
      'x-service-version': IMG,
      [`${IMG}`]: HTML,
      'x-ansi': ANSI,
      'x-long': LONG,
      'x-table': { [SCRIPT]: IMG, long: LONG },
      'x-death': [{ queue: `<script>q</script>${LONG}`, reason: 'rejected', count: 2, exchange: IMG, 'routing-keys': [SCRIPT, LONG] }],
    },
    props: { correlationId: SCRIPT, type: HTML, appId: LONG.slice(0, 200) },
  },
  {
    contentType: 'text/html',
    body: Buffer.from(`<!doctype html><html><body onload="window.__pwned=true">${SCRIPT}${IMG}${HTML} ${RUN} ${ANSI}${LONG}</body></html>`),
    headers: { 'x-error-type': `Hostile${RUN}TextError`, 'x-error-message': `${HTML}${LONG}`, 'x-service': 'html-renderer' },
  },
  {
    contentType: 'application/octet-stream',
    body: Buffer.concat([Buffer.from([0xff, 0xfe, 0x00, 0x1b]), Buffer.from(`${SCRIPT}${IMG}`), Buffer.from([0xc3, 0x28, 0x80]), Buffer.from(LONG)]),
    headers: { 'x-error-type': `Hostile${RUN}BinaryError`, 'x-error-message': `binary ${RUN} ${SCRIPT}`, 'x-bytes': Buffer.from(SCRIPT) },
  },
]

test.describe.configure({ mode: 'serial' })

type SourceRow = { id: string; queue: string; entityKey: { kind: string; pointer?: string } | null }

/** The entity key (hostile too) comes from the body; a running consumer keeps its rule, hence the off and on. */
async function useOrderIdAsEntity(request: APIRequestContext) {
  const { sources } = await (await request.get('/api/sources')).json()
  const source = sources.find((s: SourceRow) => s.queue === DLQ) as SourceRow
  if (source.entityKey?.pointer === '/orderId') return
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createChannel()
  const consumers = async () => (await channel.checkQueue(DLQ)).consumerCount
  await request.patch(`/api/sources/${source.id}`, { data: { enabled: false } })
  await expect.poll(consumers, { timeout: 30_000 }).toBe(0)
  const enabled = await request.patch(`/api/sources/${source.id}`, { data: { enabled: true, entityKey: { kind: 'jsonPointer', pointer: '/orderId' } } })
  expect(enabled.status(), await enabled.text()).toBe(200)
  await expect.poll(consumers, { timeout: 30_000 }).toBe(1)
  await connection.close()
}

test.beforeAll(async ({ request }) => {
  test.setTimeout(120_000)
  await useOrderIdAsEntity(request)
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createConfirmChannel()
  await channel.assertQueue(DLQ, { durable: true })
  for (const l of letters) channel.sendToQueue(DLQ, l.body, { contentType: l.contentType, headers: l.headers, ...l.props })
  await channel.waitForConfirms()
  await connection.close()
  await expect
    .poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=50`))?.messages?.length, { timeout: 30_000 })
    .toBe(letters.length)
})

let dialogs: string[] = []

test.beforeEach(async ({ page }) => {
  dialogs = []
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
})

/** Nothing ran, and the page is no wider than the window. */
async function assertSafe(page: Page, view: string) {
  await page.waitForLoadState('load')
  const state = await page.evaluate(() => ({
    pwned: (window as unknown as { __pwned?: unknown }).__pwned,
    parentPwned: (window.parent as unknown as { __pwned?: unknown }).__pwned,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    iframes: document.querySelectorAll('main iframe, main script, main img[src="x"]').length,
  }))
  expect(state.pwned, `${view}: window.__pwned`).toBeUndefined()
  expect(state.parentPwned, `${view}: parent.__pwned`).toBeUndefined()
  expect(state.iframes, `${view}: injected elements`).toBe(0)
  expect(dialogs, `${view}: dialogs`).toEqual([])
  expect(state.scrollWidth, `${view}: page width`).toBeLessThanOrEqual(state.innerWidth)
}

test('groups and group pages show hostile titles as text', async ({ page }) => {
  await page.goto(`/?q=${RUN}`)
  const table = page.getByRole('table', { name: 'Error groups' })
  await expect(table.locator('tbody tr')).toHaveCount(3)
  await assertSafe(page, 'groups')
  await shot(page, 'hostile-groups')

  await page.goto('/')
  await expect(table.locator('tbody tr').first()).toBeVisible()
  await assertSafe(page, 'groups, unfiltered')

  for (const name of [`Hostile${RUN}Exception`, `Hostile${RUN}TextError`, `Hostile${RUN}BinaryError`]) {
    await page.goto(`/?q=${RUN}`)
    await table.getByRole('link', { name: new RegExp(name) }).click()
    await expect(page).toHaveURL(/\/groups\/\d+$/)
    await expect(page.getByRole('table', { name: 'Messages' }).locator('tbody tr[data-message-id]')).toHaveCount(1)
    await assertSafe(page, `group ${name}`)
    if (name.endsWith('Exception')) {
      await expect(page.locator('main')).toContainText('<b>svc</b>')
      await shot(page, 'hostile-group')
    }
  }
})

test('the message list shows hostile errors as text, also when searched for', async ({ page }) => {
  await page.goto(`/messages?q=${RUN}`)
  const rows = page.getByRole('table', { name: 'Messages' }).locator('tbody tr[data-message-id]')
  await expect(rows).toHaveCount(3)
  await expect(rows.filter({ hasText: `Hostile${RUN}Exception` })).toContainText('<script>window.__pwned')
  await expect(rows.filter({ hasText: `Hostile${RUN}Exception` })).toContainText('␛[31mRED␛[0m')
  await assertSafe(page, 'messages')
  await shot(page, 'hostile-messages')

  await page.goto(`/messages?q=${encodeURIComponent('<script>window.__pwned')}`)
  await expect(rows.first()).toBeVisible()
  await assertSafe(page, 'messages searched for markup')
})

test('message details: every body view, headers, x-death and stack stay inert and inside the page', async ({ page, request }) => {
  const { messages } = await (await request.get(`/api/messages?q=${RUN}&limit=50`)).json()
  const byType = (suffix: string) => messages.find((m: { errorType: string }) => m.errorType.endsWith(suffix)).id as string

  // The JSON body, through all three views.
  await page.goto(`/messages/${byType(`Hostile${RUN}Exception`)}`)
  const main = page.locator('main')
  const body = page.getByTestId('body-view')
  await expect(page.getByTestId('error-message')).toContainText(SCRIPT)
  await expect(page.getByTestId('error-message')).toContainText('␛[31mRED␛[0m')
  await expect(page.getByTestId('error-message')).toContainText('user⟨U+202E⟩gnp.exe')
  await expect(page.getByTestId('stack-trace')).toContainText('at <script>evil()</script>')
  await expect(body).toContainText(`"${IMG}key": `)
  await expect(body).toContainText('␛]8;;http://evil.example␇osc-link')
  await expect(main).toContainText(HTML)
  await expect(main).toContainText('<b>svc</b>')
  await expect(page.locator('section', { has: page.getByRole('heading', { name: 'Derived' }) })).toContainText(`${RUN}-${IMG}`)
  await page.getByRole('button', { name: 'Expand all' }).click()
  await expect(body).not.toContainText(LONG)
  await body.getByRole('button', { name: 'show all 5,000 characters' }).first().click()
  await expect(body).toContainText(LONG)
  await assertSafe(page, 'message json')
  await shot(page, 'hostile-message-json')
  await page.getByRole('tab', { name: 'Text' }).click()
  await expect(body).toContainText('<script>window.__pwned = true; alert(')
  await assertSafe(page, 'message text')
  await page.getByRole('tab', { name: 'Hex' }).click()
  await expect(body).toContainText('|{"orderId":"')
  await assertSafe(page, 'message hex')

  // The nested header table and x-death keep their markup as text too.
  const headers = page.locator('section', { has: page.getByRole('heading', { name: 'Headers' }) })
  await expect(headers).toContainText(IMG)
  const xdeath = page.locator('section', { has: page.getByRole('heading', { name: 'x-death' }) })
  await expect(xdeath).toContainText('<script>q</script>')

  // An HTML body renders as text in the viewer, and the raw download can never be rendered by the browser.
  const htmlId = byType(`Hostile${RUN}TextError`)
  await page.goto(`/messages/${htmlId}`)
  // Terminal escapes make the server call it binary; it is still UTF-8, so the text view is offered.
  await expect(page.getByRole('tab', { name: 'Hex' })).toHaveAttribute('aria-selected', 'true')
  await page.getByRole('tab', { name: 'Text' }).click()
  await expect(body).toContainText('<body onload="window.__pwned=true">')
  await expect(body).toContainText('␛[31mRED␛[0m')
  await assertSafe(page, 'message html text')
  await shot(page, 'hostile-message-text')
  const raw = await request.get(`/api/messages/${htmlId}/body`)
  expect(raw.headers()['content-type']).toBe('application/octet-stream')
  expect(raw.headers()['content-disposition']).toContain('attachment')
  expect(raw.headers()['content-security-policy']).toContain('sandbox')

  // Binary: only the hex dump, whose ASCII column shows the markup as dots and letters.
  await page.goto(`/messages/${byType(`Hostile${RUN}BinaryError`)}`)
  await expect(page.getByRole('tab', { name: 'Hex' })).toHaveAttribute('aria-selected', 'true')
  await expect(page.getByRole('tab', { name: 'Text' })).toBeDisabled()
  await expect(body).toContainText('ff fe 00 1b 3c 73 63 72')
  await expect(body).toContainText('|....<script>wind|')
  await expect(page.locator('section', { has: page.getByRole('heading', { name: 'Headers' }) })).toContainText('bytes')
  await assertSafe(page, 'message binary')
  await shot(page, 'hostile-message-binary')
})

test('sources and a missing page stay intact', async ({ page }) => {
  await page.goto('/sources')
  await expect(page.getByRole('table', { name: 'Sources' })).toContainText(DLQ)
  await assertSafe(page, 'sources')
  await page.goto(`/messages/99999999999`)
  await expect(page.getByText('Message 99999999999 not found')).toBeVisible()
  await page.goto(`/groups/${encodeURIComponent('<script>')}`)
  await expect(page.getByText('Not found', { exact: true })).toBeVisible()
  await assertSafe(page, 'not found')
})
