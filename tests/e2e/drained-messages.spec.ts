import { expect, test } from '@playwright/test'
import amqp from 'amqplib'

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = process.env.E2E_SOURCES ?? 'e2e.dlq'
const HOSTILE = `<script>window.__pwned = true</script><img src=x onerror="window.__pwned = true">`

test.beforeAll(async () => {
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createChannel()
  await channel.deleteQueue(DLQ).catch(() => {})
  await channel.assertQueue(DLQ, { durable: true })
  channel.sendToQueue(DLQ, Buffer.from(JSON.stringify({ orderId: 'order-77', note: HOSTILE })), {
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
    .poll(async () => (await (await request.get('/api/messages')).json()).messages.length, { timeout: 30_000 })
    .toBe(1)

  await page.goto('/')
  await expect(page.getByRole('link', { name: /InventoryException/ })).toBeVisible()
  await page.screenshot({ path: 'test-results/screens/groups.png', fullPage: true })

  await page.getByRole('link', { name: /InventoryException/ }).click()
  await expect(page).toHaveURL(/\/messages\?group=/)
  await page.getByRole('row').nth(1).getByRole('link').click()
  await expect(page).toHaveURL(/\/messages\/\d+$/)
  await expect(page.getByText('order-77', { exact: false }).first()).toBeVisible()
  // The hostile markup shows up as text and nothing in it ran.
  await expect(page.getByText('<script>window.__pwned = true</script>', { exact: false }).first()).toBeVisible()
  expect(await page.evaluate(() => (window as unknown as { __pwned?: boolean }).__pwned)).toBeUndefined()
  await page.screenshot({ path: 'test-results/screens/message.png', fullPage: true })

  const body = await request.get(page.url().replace(/\/messages\//, '/api/messages/') + '/body')
  expect(body.headers()['content-disposition']).toContain('attachment')
  expect(JSON.parse(await body.text()).orderId).toBe('order-77')
})
