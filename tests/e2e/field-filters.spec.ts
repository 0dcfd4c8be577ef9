import { expect as baseExpect } from '@playwright/test'
import { test } from './support/fixtures'
import amqp from 'amqplib'
import { capture } from './support/screens'
import { sourceQueue } from './support/slots'

/*
 * Header filters in the message list: an admin adds `h.tenant = …` through the filter form, the filter lands in the
 * URL (a reload or a shared link shows the same list), is saved as a view, and the view opens the list again.
 */

const expect = baseExpect.configure({ timeout: 15_000 })
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = sourceQueue()
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const ERROR_NAME = `Field${RUN}Exception`

test.beforeAll(async ({ request }) => {
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createConfirmChannel()
  await channel.assertQueue(DLQ, { durable: true })
  for (const [n, tenant] of ['acme', 'acme', 'globex'].entries()) {
    channel.sendToQueue(DLQ, Buffer.from(JSON.stringify({ n, run: RUN })), {
      contentType: 'application/json',
      messageId: `${RUN}-field-${n}`,
      correlationId: `${RUN}-corr-${n}`,
      persistent: true,
      headers: { 'x-error-type': `com.acme.e2e.${ERROR_NAME}`, 'x-error-message': `tenant ${tenant} failed`, tenant: `${RUN}-${tenant}` },
    })
  }
  await channel.waitForConfirms()
  await connection.close()
  await expect.poll(async () => ((await (await request.get(`/api/messages?q=${RUN}&limit=10`)).json()).messages ?? []).length, { timeout: 30_000 }).toBe(3)
})

test('adds a header filter, keeps it in the URL, and saves it as a view', async ({ page }) => {
  const rows = page.getByRole('row').filter({ hasText: ERROR_NAME })
  await page.goto(`/messages?q=${RUN}`)
  await expect(rows).toHaveCount(3)

  await page.getByRole('button', { name: '+ Field filter' }).click()
  const form = page.getByRole('form', { name: 'Add a header, property, body field or x-death filter' })
  await form.getByRole('textbox', { name: 'Header name' }).fill('tenant')
  // An empty value is refused in place.
  await form.getByRole('button', { name: 'Add' }).click()
  await expect(form.getByRole('alert')).toHaveText('Enter a value')
  await form.getByRole('textbox', { name: 'Value' }).fill(`${RUN}-acme`)
  await form.getByRole('textbox', { name: 'Value' }).press('Enter')

  await expect(page).toHaveURL(new RegExp(`h\\.tenant=${RUN}-acme`))
  await expect(rows).toHaveCount(2)
  await expect(page.getByText(`h.tenant = ${RUN}-acme`)).toBeVisible()
  await page.setViewportSize({ width: 1440, height: 900 })
  await capture(page, 'search/messages-header-filter-1440')

  // The URL is the filter: a reload (or the link sent to a colleague) shows the same list.
  await page.reload()
  await expect(rows).toHaveCount(2)

  const viewName = `Acme ${RUN}`
  await page.getByRole('button', { name: 'Save view' }).click()
  await page.getByRole('textbox', { name: 'View name' }).fill(viewName)
  await page.getByRole('textbox', { name: 'View name' }).press('Enter')
  await expect(page.getByRole('combobox', { name: 'Saved views' })).toHaveValue(/\d+/)
  await expect(page.getByRole('combobox', { name: 'Saved views' }).locator('option:checked')).toHaveText(viewName)
  await page.setViewportSize({ width: 1024, height: 800 })
  await capture(page, 'search/messages-saved-view-1024')

  // Opening the view from an unfiltered list brings the filters back.
  await page.goto('/messages')
  await page.getByRole('combobox', { name: 'Saved views' }).selectOption({ label: viewName })
  await expect(page).toHaveURL(new RegExp(`h\\.tenant=${RUN}-acme`))
  await expect(rows).toHaveCount(2)

  // A property filter from the same form narrows further; removing the header chip widens again.
  await page.getByRole('button', { name: '+ Field filter' }).click()
  await form.getByRole('combobox', { name: 'Filter on' }).selectOption('property')
  await form.getByRole('combobox', { name: 'Property' }).selectOption('correlationId')
  await form.getByRole('textbox', { name: 'Value' }).fill(`${RUN}-corr-2`)
  await form.getByRole('button', { name: 'Add' }).click()
  await expect(rows).toHaveCount(0)
  await page.getByRole('button', { name: `Remove filter h.tenant = ${RUN}-acme` }).click()
  await expect(rows).toHaveCount(1)
  await page.setViewportSize({ width: 1440, height: 900 })
  await capture(page, 'search/messages-property-filter-1440')

  // Deleting the view.
  await page.goto('/messages')
  await page.getByRole('combobox', { name: 'Saved views' }).selectOption({ label: viewName })
  await page.getByRole('button', { name: `Delete view ${viewName}` }).click()
  await expect(page.getByRole('combobox', { name: 'Saved views' }).locator('option', { hasText: viewName })).toHaveCount(0)
})
