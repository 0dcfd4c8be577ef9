import { readFile } from 'node:fs/promises'
import { expect as baseExpect, type Page } from '@playwright/test'
import { test } from './support/fixtures'
import amqp from 'amqplib'
import { parse } from 'csv-parse/sync'
import { capture } from './support/screens'
import { sourceQueue } from './support/slots'

/*
 * Export for bug tickets: an operator downloads the dead letters matching a search as CSV, JSON Lines and a Markdown
 * ticket, copies a message's ticket to the clipboard, and checks the settings page. Every file is redacted: the
 * password in the bodies and the e-mail address never leave the server.
 */

const expect = baseExpect.configure({ timeout: 15_000 })
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = sourceQueue()
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const ERROR_TYPE = `com.acme.e2e.Export${RUN}Exception`
const SECRET = `hunter2-${RUN}`
const EMAIL = `jane.${RUN.toLowerCase()}@example.com`

test.beforeAll(async ({ request }) => {
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createConfirmChannel()
  await channel.assertQueue(DLQ, { durable: true })
  for (let n = 0; n < 3; n++) {
    const body = { orderId: `${RUN}-order-${n}`, customer: { email: EMAIL, password: SECRET }, note: 'commas, "quotes"\nand a newline' }
    channel.sendToQueue(DLQ, Buffer.from(JSON.stringify(body)), {
      contentType: 'application/json',
      messageId: `${RUN}-export-${n}`,
      persistent: true,
      headers: { 'x-error-type': ERROR_TYPE, 'x-error-message': `order ${n}, "${RUN}" failed\non line two`, 'x-service': 'orders' },
    })
  }
  await channel.waitForConfirms()
  await connection.close()
  await expect
    .poll(async () => ((await (await request.get(`/api/messages?q=${RUN}&limit=10`)).json()).messages ?? []).length, { timeout: 30_000 })
    .toBe(3)
})

async function download(page: Page, menuButton: RegExp, format: RegExp): Promise<{ name: string; text: string }> {
  await page.getByRole('button', { name: menuButton }).click()
  const [file] = await Promise.all([page.waitForEvent('download'), page.getByRole('menuitem', { name: format }).click()])
  const path = await file.path()
  return { name: file.suggestedFilename(), text: await readFile(path, 'utf8') }
}

test('downloads CSV, JSON Lines and a Markdown ticket, all redacted', async ({ page }) => {
  await page.goto(`/messages?q=${RUN}`)
  await expect(page.getByRole('row').filter({ hasText: ERROR_TYPE.split('.').pop()! })).toHaveCount(3)

  const csv = await download(page, /^Export matching/, /^CSV/)
  expect(csv.name).toMatch(/\.csv$/)
  const records = parse(csv.text.replace(/^\uFEFF/, ''), { columns: true, skip_empty_lines: true }) as Record<string, string>[]
  expect(records).toHaveLength(3)
  const header = Object.keys(records[0])
  expect(header).toEqual(expect.arrayContaining(['id', 'error_type']))
  expect(records.every((r) => r.error_type === ERROR_TYPE)).toBe(true)
  // Commas, quotes and newlines survive the round trip through a standard CSV parser.
  const messages = records.map((r) => Object.values(r).find((v) => v.startsWith('order ') && v.includes(RUN))).sort()
  expect(messages).toEqual([0, 1, 2].map((n) => `order ${n}, "${RUN}" failed\non line two`))
  expect(csv.text).not.toContain(SECRET)
  expect(csv.text).not.toContain(EMAIL)

  const jsonl = await download(page, /^Export matching/, /^JSON Lines/)
  expect(jsonl.name).toMatch(/\.jsonl$/)
  const lines = jsonl.text.trim().split('\n').map((l) => JSON.parse(l))
  expect(lines).toHaveLength(3)
  expect(new Set(lines.map((l) => l.id)).size).toBe(3)
  expect(jsonl.text).not.toContain(SECRET)
  expect(jsonl.text).not.toContain(EMAIL)

  await page.goto(`/messages/${lines[0].id}`)
  await expect(page.getByRole('button', { name: 'Copy as ticket' })).toBeVisible()
  const md = await download(page, /^Export$/, /^Markdown ticket/)
  expect(md.name).toMatch(/\.md$/)
  expect(md.text).toMatch(/^#/m)
  expect(md.text).toContain(ERROR_TYPE)
  expect(md.text).not.toContain(SECRET)
  await capture(page, 'message-export-menu', { fullPage: true })
})

test('copies a group ticket to the clipboard, redacted', async ({ page, context, baseURL, request }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseURL })
  const { messages } = await (await request.get(`/api/messages?q=${RUN}&limit=1`)).json()
  await page.goto(`/groups/${messages[0].groupId}`)
  await expect(page.getByRole('button', { name: 'Copy as ticket' })).toBeVisible()
  await page.getByRole('button', { name: 'Copy as ticket' }).click()
  await expect(page.getByRole('button', { name: /Copied/ })).toBeVisible()
  const ticket = await page.evaluate(() => navigator.clipboard.readText())
  expect(ticket).toContain(ERROR_TYPE)
  expect(ticket).toMatch(/^#/m)
  expect(ticket).not.toContain(SECRET)
  expect(ticket).not.toContain(EMAIL)
  await capture(page, 'group-export', { fullPage: true })
})

test('settings show the redaction rules and the store', async ({ page }) => {
  await page.goto('/settings')
  await expect(page.getByRole('heading', { name: 'Redaction' })).toBeVisible()
  await expect(page.getByRole('heading', { name: 'Store and retention' })).toBeVisible()
  await expect(page.getByText(/dead_letters/).first()).toBeVisible()
  await capture(page, 'settings', { fullPage: true })
})
