import { expect as baseExpect } from '@playwright/test'
import { test } from './support/fixtures'
import { pollJson } from './support/api-json'
import amqp from 'amqplib'
import { sourceQueue } from './support/slots'

// Two cores shared with the server, PostgreSQL and RabbitMQ: allow a loaded machine some slack.
const expect = baseExpect.configure({ timeout: 15_000 })

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = sourceQueue()
const HOSTILE = `<script>window.__pwned = true</script><img src=x onerror="window.__pwned = true">`
// Other specs publish into the same queue and database: this one finds its letter by this marker.
const MARKER = `order-${Date.now().toString(36)}`

test.beforeAll(async () => {
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createChannel()
  await channel.assertQueue(DLQ, { durable: true })
  channel.sendToQueue(DLQ, Buffer.from(JSON.stringify({ orderId: MARKER, note: HOSTILE })), {
    contentType: 'application/json',
    messageId: 'm-e2e-1',
    headers: {
      'x-error-type': 'com.acme.InventoryException',
      'x-error-message': `SKU 4821 unavailable ${HOSTILE}`,
      'x-service': 'orders',
      'x-service-version': '1.5.0',
      'x-death': [{ queue: 'orders.work', reason: 'rejected', count: 3, exchange: 'orders', 'routing-keys': ['order.created'], time: { '!': 'timestamp', value: Math.floor(Date.now() / 1000) } }],
      'x-first-death-queue': 'orders.work',
      'x-first-death-reason': 'rejected',
      'x-first-death-exchange': 'orders',
    },
  })
  await channel.close()
  await connection.close()
})

test('a drained dead letter is listed, grouped and readable, and its content never executes', async ({ page, request }) => {
  await expect
    .poll(async () => (await pollJson(request, `/api/messages?q=${MARKER}`))?.messages?.length, { timeout: 30_000 })
    .toBe(1)

  await page.goto('/')
  const group = page.getByRole('table', { name: 'Error groups' }).getByRole('link', { name: /InventoryException/ })
  await expect(group).toBeVisible()

  await group.click()
  await expect(page).toHaveURL(/\/groups\/\d+$/)
  await page.getByLabel('Search messages').fill(MARKER)
  await page.getByLabel('Search messages').press('Enter')
  const row = page.getByRole('table', { name: 'Messages' }).locator('tbody tr[data-message-id]')
  await expect(row).toHaveCount(1)
  await row.getByRole('link').first().click()
  await expect(page).toHaveURL(/\/messages\/\d+$/)
  await expect(page.getByText(MARKER, { exact: false }).first()).toBeVisible()
  // The hostile markup shows up as text and nothing in it ran.
  await expect(page.getByText('<script>window.__pwned = true</script>', { exact: false }).first()).toBeVisible()
  expect(await page.evaluate(() => (window as unknown as { __pwned?: boolean }).__pwned)).toBeUndefined()

  const body = await request.get(page.url().replace(/\/messages\//, '/api/messages/') + '/body')
  expect(body.headers()['content-disposition']).toContain('attachment')
  expect(JSON.parse(await body.text()).orderId).toBe(MARKER)
})
