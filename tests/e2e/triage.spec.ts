import { expect as baseExpect, type APIRequestContext, type Page } from '@playwright/test'
import { test } from './support/fixtures'
import { pollJson } from './support/api-json'
import amqp from 'amqplib'
import { shot } from './support/screens'
import { sourceQueue } from './support/slots'

/*
 * The triage pages end to end: dead letters published into the DLQ the server drains, then browsed,
 * filtered, searched, paginated, selected and driven by keyboard in Chromium. Every spec shares one server
 * and database, so everything here is found through a per-run marker (letters no normaliser strips).
 */

// Two cores shared with the server, PostgreSQL and RabbitMQ: allow a loaded machine some slack.
const expect = baseExpect.configure({ timeout: 15_000 })

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = sourceQueue()
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const STOCK = `com.acme.e2e.Stock${RUN}Exception`
const PAYLOAD = `com.acme.e2e.Payload${RUN}Exception`
const order = (n: number) => `${RUN}-order-${n}`
const now = () => Math.floor(Date.now() / 1000)

type Letter = { body: unknown; headers: Record<string, unknown>; messageId: string }

const xDeath = (queue: string, reason: string, count: number) => [
  { queue, reason, count, exchange: 'orders', 'routing-keys': ['order.created'], time: { '!': 'timestamp', value: now() - 60 } },
]

const stock = (n: number, orderNo: number, version: string, extra: Record<string, unknown> = {}): Letter => ({
  messageId: `${RUN}-stock-${n}`,
  body: { orderId: order(orderNo), sku: 4821 + n, lines: [{ sku: 4821 + n, qty: n }] },
  headers: {
    'x-error-type': STOCK,
    'x-error-message': `SKU ${4821 + n} out of stock for ${RUN}`,
    'x-error-stack': `${STOCK}: SKU ${4821 + n} out of stock\n    at com.acme.orders.Inventory.reserve(Inventory.java:88)\n    at com.acme.orders.OrderService.place(OrderService.java:142)`,
    'x-failure-kind': 'transient',
    'x-service': 'orders',
    'x-service-version': version,
    'x-death': xDeath('orders.work', 'rejected', 3),
    ...extra,
  },
})

const payload = (n: number, orderNo: number): Letter => ({
  messageId: `${RUN}-payload-${n}`,
  body: { orderId: order(orderNo), total: 'not-a-number' },
  headers: {
    'x-error-type': PAYLOAD,
    'x-error-message': `Cannot parse the payload of ${RUN}`,
    'x-failure-kind': 'invalid',
    'x-service': 'billing',
    'x-service-version': '2.0.0',
    'x-death': xDeath('billing.work', 'rejected', 1),
  },
})

// Seven letters in three groups; order 1 fails in two groups, so "same entity" has something to show.
const LETTERS: Letter[] = [
  stock(1, 1, '1.5.0', {
    'x-e2e-int64': { '!': 'int64', value: '9007199254740993' },
    'x-e2e-sent': { '!': 'timestamp', value: 1_790_000_000 },
    'x-e2e-table': { region: 'eu-west', retries: 1000 },
    'x-e2e-list': ['a', 2],
  }),
  stock(2, 2, '1.5.0'),
  stock(3, 1, '1.6.0'),
  stock(4, 3, '1.6.0'),
  payload(1, 4),
  payload(2, 1),
  { messageId: `${RUN}-expired`, body: { orderId: order(5) }, headers: { 'x-death': xDeath('orders.reservations', 'expired', 1) } },
]

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

type SourceRow = { id: string; queue: string; entityKey: { kind: string; pointer?: string } | null }

/**
 * Entity keys come from the body (`/orderId`), so the same order links messages across groups. A running
 * consumer keeps the rule it started with, so the source is switched off and on again around the change.
 */
async function useOrderIdAsEntity(request: APIRequestContext) {
  const { sources } = await (await request.get('/api/sources')).json()
  const source = sources.find((s: SourceRow) => s.queue === DLQ) as SourceRow | undefined
  expect(source, `source ${DLQ}`).toBeTruthy()
  if (source!.entityKey?.pointer === '/orderId') return
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createChannel()
  const consumers = async () => (await channel.checkQueue(DLQ)).consumerCount
  await request.patch(`/api/sources/${source!.id}`, { data: { enabled: false } })
  await expect.poll(consumers, { timeout: 30_000 }).toBe(0)
  await request.patch(`/api/sources/${source!.id}`, { data: { enabled: true, entityKey: { kind: 'jsonPointer', pointer: '/orderId' } } })
  await expect.poll(consumers, { timeout: 30_000 }).toBe(1)
  await connection.close()
}

const rows = (page: Page) => page.getByRole('table', { name: 'Messages' }).locator('tbody tr[data-message-id]')

test.describe.configure({ mode: 'serial' })

test.beforeAll(async ({ request }) => {
  test.setTimeout(120_000)
  await useOrderIdAsEntity(request)
  await publish(LETTERS)
  await expect
    .poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=100`))?.messages?.length, { timeout: 30_000 })
    .toBe(LETTERS.length)
})

test('groups → group → message', async ({ page }) => {
  await page.goto(`/?q=${RUN}`)
  const groups = page.getByRole('table', { name: 'Error groups' })
  await expect(groups.getByRole('link', { name: new RegExp(`Stock${RUN}Exception`) })).toBeVisible()
  await expect(groups.getByRole('link', { name: new RegExp(`Payload${RUN}Exception`) })).toBeVisible()
  await expect(groups.locator('tbody tr')).toHaveCount(2)
  await expect(page.getByRole('region', { name: 'Summary' })).toContainText(DLQ)
  await expect(groups.locator('tbody tr').first().getByRole('img', { name: /last 24 hours/ })).toHaveAttribute('aria-label', /arrivals/)
  await shot(page, 'groups')

  await groups.getByRole('link', { name: new RegExp(`Stock${RUN}Exception`) }).click()
  await expect(page).toHaveURL(/\/groups\/\d+$/)
  await expect(page.getByRole('heading', { level: 1 })).toContainText(`Stock${RUN}Exception`)
  await expect(page.getByRole('region', { name: 'Numbers' })).toContainText('4')
  const versions = page.locator('section', { has: page.getByRole('heading', { name: 'Service versions' }) })
  await expect(versions).toContainText('1.5.0')
  await expect(versions).toContainText('1.6.0')
  await expect(rows(page)).toHaveCount(4)
  await page.getByRole('tab', { name: '7d' }).click()
  await expect(page).toHaveURL(/range=7d/)
  await expect(page.getByRole('tab', { name: '7d' })).toHaveAttribute('aria-selected', 'true')
  await shot(page, 'group')

  // The first letter (version 1.5.0, order 1) carries the typed headers.
  await rows(page).filter({ hasText: 'orders@1.5.0' }).filter({ hasText: order(1) }).getByRole('link').nth(1).click()
  await expect(page).toHaveURL(/\/messages\/\d+$/)
  await expect(page.getByRole('heading', { level: 1 })).toContainText(`Stock${RUN}Exception`)
  await expect(page.getByTestId('error-message')).toContainText(`SKU 4822 out of stock for ${RUN}`)
  await expect(page.getByTestId('stack-trace')).toContainText('Inventory.java:88')
  await expect(page.getByTestId('body-view')).toContainText(`"${order(1)}"`)

  const headers = page.locator('section', { has: page.getByRole('heading', { name: 'Headers' }) })
  const header = (name: string) => headers.locator('tbody > tr', { has: page.locator('td', { hasText: new RegExp(`^${name}$`) }) })
  await expect(header('x-e2e-int64')).toContainText('int64')
  await expect(header('x-e2e-int64')).toContainText('9007199254740993')
  await expect(header('x-e2e-sent')).toContainText('timestamp')
  await expect(header('x-e2e-sent')).toContainText('2026-09-21T')
  await expect(header('x-e2e-table')).toContainText('table')
  await expect(header('x-e2e-table')).toContainText('eu-west')
  await expect(header('x-e2e-list')).toContainText('array')
  await expect(header('x-error-type')).toContainText('longstr')

  const xdeath = page.locator('section', { has: page.getByRole('heading', { name: 'x-death' }) })
  await expect(xdeath).toContainText('orders.work')
  await expect(xdeath).toContainText('rejected')
  await expect(xdeath).toContainText('×3')
  await expect(xdeath).toContainText('order.created')

  // Order 1 also failed in the payload group.
  const sameEntity = page.locator('section', { has: page.getByRole('heading', { name: 'Same entity' }) })
  await expect(sameEntity.getByRole('link', { name: new RegExp(`Payload${RUN}Exception`) })).toBeVisible()

  // Body views: the JSON tree folds, and the text and hex tabs show the same bytes.
  const body = page.getByTestId('body-view')
  await body.getByRole('button', { name: 'Collapse' }).first().click()
  await expect(body).not.toContainText(order(1))
  await page.getByRole('tab', { name: 'Text' }).click()
  await expect(body).toContainText(`{"orderId":"${order(1)}"`)
  await page.getByRole('tab', { name: 'Hex' }).click()
  await expect(body).toContainText('00000000  7b 22 6f 72 64 65 72 49')
  await page.getByRole('tab', { name: 'JSON' }).click()
  await shot(page, 'message')
})

test('filters live in the URL and the back button restores them', async ({ page }) => {
  await page.goto(`/messages?q=${RUN}`)
  await expect(rows(page)).toHaveCount(7)

  await page.getByLabel('Failure kind').selectOption('invalid')
  await expect(page).toHaveURL(/failureKind=invalid/)
  await expect(rows(page)).toHaveCount(2)
  await page.getByLabel('Status').selectOption('dead')
  await expect(page).toHaveURL(/status=dead/)
  await expect(rows(page)).toHaveCount(2)
  await shot(page, 'messages-filtered')

  await page.goBack()
  await expect(page).not.toHaveURL(/status=/)
  await expect(page).toHaveURL(/failureKind=invalid/)
  await page.goBack()
  await expect(page).not.toHaveURL(/failureKind=/)
  await expect(page.getByLabel('Failure kind')).toHaveValue('')
  await expect(rows(page)).toHaveCount(7)

  // The same on the groups page, whose filters go to the API.
  await page.goto(`/?q=${RUN}`)
  const groups = page.getByRole('table', { name: 'Error groups' }).locator('tbody tr')
  await expect(groups).toHaveCount(2)
  await page.getByLabel('Failure kind').selectOption('invalid')
  await expect(page).toHaveURL(/failureKind=invalid/)
  await expect(groups).toHaveCount(1)
  await expect(groups.first()).toContainText(`Payload${RUN}Exception`)
  await page.getByRole('button', { name: 'Count' }).click()
  await expect(page).toHaveURL(/sort=count/)
  await page.goBack()
  await page.goBack()
  await expect(page).not.toHaveURL(/failureKind=/)
  await expect(groups).toHaveCount(2)
})

test('search narrows the list and is shareable', async ({ page }) => {
  await page.goto('/messages')
  await expect(rows(page).first()).toBeVisible()
  await page.keyboard.press('/')
  await expect(page.getByLabel('Search messages')).toBeFocused()
  await page.keyboard.type(order(1))
  await expect(page).toHaveURL(new RegExp(`q=${order(1)}`))
  await expect(rows(page)).toHaveCount(3)
  for (const row of await rows(page).all()) await expect(row).toContainText(order(1))

  await page.reload()
  await expect(page.getByLabel('Search messages')).toHaveValue(order(1))
  await expect(rows(page)).toHaveCount(3)
})

test('keyset pages load more without losing rows', async ({ page }) => {
  await page.goto(`/messages?q=${RUN}&limit=2`)
  await expect(rows(page)).toHaveCount(2)
  const loadMore = page.getByRole('button', { name: 'Load more' })
  for (const expected of [4, 6, 7]) {
    await loadMore.click()
    await expect(rows(page)).toHaveCount(expected)
  }
  await expect(loadMore).toHaveCount(0)
  const ids = await rows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-message-id')))
  expect(new Set(ids).size).toBe(7)
})

test('selection: rows, shift ranges, the page and everything matching', async ({ page }) => {
  await page.goto(`/messages?q=${RUN}&limit=2`)
  await page.getByRole('button', { name: 'Load more' }).click()
  await page.getByRole('button', { name: 'Load more' }).click()
  await expect(rows(page)).toHaveCount(6)
  const box = (i: number) => rows(page).nth(i).getByRole('checkbox')
  const summary = page.getByTestId('selection-summary')
  await expect(page.getByTestId('message-count')).toContainText('7 matching · 6 loaded')

  await box(0).click()
  await expect(summary).toHaveText(/^1 selected/)
  await box(3).click({ modifiers: ['Shift'] })
  await expect(summary).toHaveText(/^4 selected/)
  for (const i of [0, 1, 2, 3]) await expect(box(i)).toBeChecked()
  await expect(box(4)).not.toBeChecked()
  // A shift-click on a selected row clears the range from the last clicked row down to it.
  await box(1).click({ modifiers: ['Shift'] })
  await expect(summary).toHaveText(/^1 selected/)
  await expect(box(0)).toBeChecked()
  await expect(box(1)).not.toBeChecked()

  await page.getByRole('checkbox', { name: 'Select all loaded messages' }).check()
  await expect(summary).toHaveText(/^6 selected \(all 6 loaded\)/)
  await page.getByRole('button', { name: /Select all 7 matching/ }).click()
  await expect(summary).toContainText('All 7 messages matching this filter are selected')
  await shot(page, 'messages-selected')

  await page.getByRole('button', { name: 'Clear selection' }).click()
  await expect(summary).toHaveCount(0)
  await expect(box(0)).not.toBeChecked()
})

test('keyboard: j/k move, x selects, Enter opens', async ({ page }) => {
  await page.goto(`/messages?q=${RUN}`)
  await expect(rows(page)).toHaveCount(7)
  await page.keyboard.press('j')
  await expect(rows(page).nth(0)).toHaveAttribute('data-cursor', 'true')
  await page.keyboard.press('j')
  await page.keyboard.press('j')
  await expect(rows(page).nth(2)).toHaveAttribute('data-cursor', 'true')
  await page.keyboard.press('k')
  await expect(rows(page).nth(1)).toHaveAttribute('data-cursor', 'true')
  await page.keyboard.press('x')
  await expect(rows(page).nth(1).getByRole('checkbox')).toBeChecked()
  const id = await rows(page).nth(1).getAttribute('data-message-id')
  await page.keyboard.press('Enter')
  await expect(page).toHaveURL(new RegExp(`/messages/${id}$`))

  // Keys typed into the search box stay there.
  await page.goto(`/?q=${RUN}`)
  await expect(page.getByRole('table', { name: 'Error groups' }).locator('tbody tr')).toHaveCount(2)
  await page.getByLabel('Filter groups').click()
  await page.keyboard.press('End')
  await page.keyboard.type('j')
  await expect(page.getByLabel('Filter groups')).toHaveValue(`${RUN}j`)
  await expect(page.getByRole('table', { name: 'Error groups' }).locator('tbody tr[data-cursor]')).toHaveCount(0)
  await page.keyboard.press('Backspace')
  await page.keyboard.press('Escape')
  await page.keyboard.press('j')
  await expect(page.getByRole('table', { name: 'Error groups' }).locator('tbody tr').first()).toHaveAttribute('data-cursor', 'true')
  await page.keyboard.press('Enter')
  await expect(page).toHaveURL(/\/groups\/\d+$/)
})

test('sources: live depth, add a queue, edit its settings with validation from the API', async ({ page, request }) => {
  const queue = `e2e.extra.${RUN.toLowerCase()}`
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createChannel()
  await channel.assertQueue(queue, { durable: false, autoDelete: false })
  try {
    await page.goto('/sources')
    const table = page.getByRole('table', { name: 'Sources' })
    await expect(table.locator(`tr[data-source="${DLQ}"]`)).toContainText('body /orderId')

    await page.getByLabel('Dead-letter queue').fill('amq.nope')
    await page.getByRole('button', { name: 'Add source' }).click()
    await expect(page.getByRole('form', { name: 'Add a source' }).getByRole('alert')).toContainText('reserved by RabbitMQ')
    await page.getByLabel('Dead-letter queue').fill(queue)
    await page.getByRole('button', { name: 'Add source' }).click()
    const row = table.locator(`tr[data-source="${queue}"]`)
    await expect(row).toBeVisible()
    // Polled every few seconds: the depth column follows the broker.
    await expect(row.getByTestId('depth')).toHaveText(/^\d+$/, { timeout: 15_000 })

    await row.getByRole('button', { name: 'Edit' }).click()
    const form = page.getByRole('form', { name: `Settings of ${queue}` })
    await form.getByLabel('Entity key source').selectOption('jsonPointer')
    await form.getByLabel('JSON pointer').fill('orderId')
    await form.getByLabel('Default replay target').selectOption('custom')
    await form.getByLabel('Exchange').fill('orders')
    await form.getByLabel('Routing key').fill('order.retry')
    await form.getByRole('button', { name: 'Save' }).click()
    await expect(form.getByRole('alert')).toContainText('JSON pointer')
    await shot(page, 'sources-validation')

    await form.getByLabel('JSON pointer').fill('/order/id')
    await form.getByLabel('Order-sensitive').check()
    await form.getByRole('button', { name: 'Save' }).click()
    await expect(form).toHaveCount(0)
    await expect(row).toContainText('body /order/id')
    await expect(row).toContainText('sensitive')
    await expect(row).toContainText('orders → order.retry')
    await shot(page, 'sources')
  } finally {
    const { sources } = await (await request.get('/api/sources')).json()
    const added = sources.find((s: { queue: string }) => s.queue === queue)
    if (added) await request.delete(`/api/sources/${added.id}`)
    await channel.deleteQueue(queue).catch(() => {})
    await connection.close()
  }
})
