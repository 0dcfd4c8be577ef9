import { expect as baseExpect } from '@playwright/test'
import { test } from './support/fixtures'
import amqp from 'amqplib'
import { capture } from './support/screens'
import { sourceQueue } from './support/slots'
import { AMQP_URL } from './support/dead-letter'

/*
 * Body field filters in the filter bar (issue 28, "Body fields"): an admin picks a pointer the form offers from recent
 * JSON bodies, `b./order/customer = 42` lands in the URL and matches the number 42 and the string "42" but no text
 * body, the bar says that only JSON bodies match, and a bad pointer is refused in place.
 */

const expect = baseExpect.configure({ timeout: 15_000 })
const DLQ = sourceQueue()
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const ERROR_NAME = `Body${RUN}Exception`

const BODIES = [
  JSON.stringify({ run: RUN, order: { customer: 42 }, type: 'refund.partial' }),
  JSON.stringify({ run: RUN, order: { customer: '42' }, type: 'refund.full' }),
  JSON.stringify({ run: RUN, order: { customer: 7 }, type: 'payment' }),
  `run ${RUN} order customer 42 (not JSON)`,
]

test.beforeAll(async ({ request }) => {
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createConfirmChannel()
  await channel.assertQueue(DLQ, { durable: true })
  for (const [n, body] of BODIES.entries()) {
    channel.sendToQueue(DLQ, Buffer.from(body), {
      contentType: body.startsWith('{') ? 'application/json' : 'text/plain',
      messageId: `${RUN}-body-${n}`,
      persistent: true,
      headers: { 'x-error-type': `com.acme.e2e.${ERROR_NAME}`, 'x-error-message': `order ${n} failed` },
    })
  }
  await channel.waitForConfirms()
  await connection.close()
  await expect.poll(async () => ((await (await request.get(`/api/messages?q=${RUN}&limit=10`)).json()).messages ?? []).length, { timeout: 30_000 }).toBe(4)
})

test('adds a body field filter from the offered pointers; only JSON bodies match, and the bar says so', async ({ page }) => {
  const rows = page.getByRole('row').filter({ hasText: ERROR_NAME })
  await page.goto(`/messages?q=${RUN}`)
  await expect(rows).toHaveCount(4)

  await page.getByRole('button', { name: '+ Field filter' }).click()
  const form = page.getByRole('form', { name: 'Add a header, property, body field or x-death filter' })
  await form.getByRole('combobox', { name: 'Filter on' }).selectOption('body')
  const pointer = form.getByRole('combobox', { name: 'JSON Pointer' })
  // The pointers of the most recent JSON bodies, offered as the pointer is typed (a native list: asserted on its options).
  await expect(form.locator('datalist option[value="/order/customer"]')).toHaveCount(1)
  await expect(form.locator('datalist option[value="/type"]')).toHaveCount(1)

  // A pointer without its leading slash is refused in place, saying why.
  await pointer.fill('order/customer')
  await form.getByRole('textbox', { name: 'Value' }).fill('42')
  await form.getByRole('button', { name: 'Add' }).click()
  await expect(form.getByRole('alert')).toContainText('Not a JSON Pointer')

  await pointer.fill('/order/customer')
  await capture(form, 'search/messages-body-field-form-1440')
  await form.getByRole('textbox', { name: 'Value' }).press('Enter')
  await expect(page).toHaveURL(/b\.%2Forder%2Fcustomer=42|b\.\/order\/customer=42/)
  // The number 42 and the string "42"; neither 7 nor the text body that says 42.
  await expect(rows).toHaveCount(2)
  await expect(page.getByText('b./order/customer = 42')).toBeVisible()
  await expect(page.getByText('Body fields match JSON bodies only')).toBeVisible()
  await page.setViewportSize({ width: 1440, height: 900 })
  await capture(page, 'search/messages-body-field-filter-1440')

  // A prefix narrows further; the URL is the filter.
  await page.getByRole('button', { name: '+ Field filter' }).click()
  await form.getByRole('combobox', { name: 'Filter on' }).selectOption('body')
  await pointer.fill('/type')
  await form.getByRole('combobox', { name: 'Operator' }).selectOption('prefix')
  await form.getByRole('textbox', { name: 'Value' }).fill('refund.p')
  await form.getByRole('button', { name: 'Add' }).click()
  await expect(rows).toHaveCount(1)
  await page.reload()
  await expect(rows).toHaveCount(1)
  await page.setViewportSize({ width: 1024, height: 800 })
  await capture(page, 'search/messages-body-field-filter-1024')

  // Removing the body filters takes the hint away.
  await page.getByRole('button', { name: 'Remove filter b./type starts with refund.p' }).click()
  await expect(rows).toHaveCount(2)
  await page.getByRole('button', { name: 'Remove filter b./order/customer = 42' }).click()
  await expect(rows).toHaveCount(4)
  await expect(page.getByText('Body fields match JSON bodies only')).toHaveCount(0)
})
