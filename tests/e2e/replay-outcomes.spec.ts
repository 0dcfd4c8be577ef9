import { expect as baseExpect, type Page } from '@playwright/test'
import { E2E_ADMIN, test } from './support/fixtures'
import { pollJson } from './support/api-json'
import amqp from 'amqplib'

/*
 * What a replay says about itself (issue 16): an admin sets the large-replay size in Settings and a replay that large
 * needs its count typed (Enter alone does nothing); a cancelled job says "N replayed · M cancelled", on its page and
 * in the list, and its per-message outcomes stop saying "in flight" without a reload; a replayed message names who
 * replayed it, when and in which job; and a failed-queue target whose queue is gone is planned as unroutable and
 * cannot start. Messages are dead-lettered by RabbitMQ itself, through a work queue whose dead-letter route leads to
 * the DLQ the server drains.
 */

const expect = baseExpect.configure({ timeout: 15_000 })

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = (process.env.E2E_SOURCES ?? 'e2e.dlq').split(',')[0]!
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const EXCHANGE = `e2e.outcome.${RUN.toLowerCase()}`
const WORK = `e2e.outcome.work.${RUN.toLowerCase()}`
const KEY = `order.outcome.${RUN.toLowerCase()}`
const ERROR = `com.acme.e2e.Outcome${RUN}Exception`
const COUNT = 14
const LARGE = 10
const SHOTS = '/tmp/shots/replay'

async function deadLetter(count: number) {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await channel.assertQueue(DLQ, { durable: true })
    await channel.assertExchange(EXCHANGE, 'direct', { durable: false, autoDelete: false })
    await channel.assertQueue(WORK, { durable: false, autoDelete: false, arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': DLQ } })
    await channel.bindQueue(WORK, EXCHANGE, KEY)
    for (let n = 1; n <= count; n++) {
      const headers = { 'x-error-type': ERROR, 'x-error-message': `order ${n} of ${RUN} failed`, 'x-service': 'orders' }
      channel.publish(EXCHANGE, KEY, Buffer.from(JSON.stringify({ n, run: RUN })), { contentType: 'application/json', messageId: `outcome-${n}`, headers, persistent: true })
    }
    await channel.waitForConfirms()
    let rejected = 0
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${rejected} of ${count} reached ${WORK}`)), 15_000)
      void channel.consume(WORK, (msg) => {
        if (!msg) return
        channel.nack(msg, false, false)
        if (++rejected === count) {
          clearTimeout(timer)
          resolve()
        }
      })
    })
  } finally {
    await connection.close()
  }
}

async function deleteWorkQueue() {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createChannel()
    await channel.deleteQueue(WORK).catch(() => {})
    await channel.deleteExchange(EXCHANGE).catch(() => {})
  } finally {
    await connection.close().catch(() => {})
  }
}

/** Full-page screenshots at 1440 and 1024 px wide, for looking at what changed. */
async function shots(page: Page, name: string) {
  for (const width of [1440, 1024]) {
    await page.setViewportSize({ width, height: 900 })
    await page.screenshot({ path: `${SHOTS}/${name}-${width}.png`, fullPage: true })
  }
  await page.setViewportSize({ width: 1440, height: 900 })
}

let jobId = ''

test.describe.configure({ mode: 'serial' })

test.beforeAll(async ({ request }) => {
  test.setTimeout(90_000)
  await deadLetter(COUNT)
  await expect.poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=100`))?.messages?.length, { timeout: 30_000 }).toBe(COUNT)
})

test.afterAll(async ({ request }) => {
  await request.put('/api/settings/replay-confirm', { data: { largeJobMessages: 100 } })
  await deleteWorkQueue()
})

test('an admin sets the large-replay size; such a replay starts only once its count is typed', async ({ page }) => {
  test.setTimeout(90_000)
  await page.goto('/settings')
  const size = page.getByLabel('Large replay size (messages)')
  await expect(size).toHaveValue('100')
  await size.fill(String(LARGE))
  await size.press('Enter')
  await expect(page.getByText(`Set by ${E2E_ADMIN.email}`)).toBeVisible()
  await shots(page, 'settings-large-replays')

  await page.goto(`/?q=Outcome${RUN}`)
  await page.getByRole('table', { name: 'Error groups' }).getByRole('link', { name: new RegExp(`Outcome${RUN}Exception`) }).click()
  await page.getByRole('button', { name: 'Replay group…' }).click()
  const dialog = page.getByRole('dialog', { name: 'Replay plan' })
  await dialog.getByRole('radio', { name: 'Failed queue only' }).check()
  await dialog.getByLabel('Rate per second').fill('1')
  await expect(dialog.getByTestId('plan-estimate')).toHaveText(`${COUNT} s`)
  const confirmCount = dialog.getByTestId('confirm-count')
  await expect(confirmCount).toContainText(`Type ${COUNT} to confirm`)
  const start = dialog.getByRole('button', { name: `Replay ${COUNT} messages` })
  await expect(start).toBeDisabled()
  // Enter alone does not start it.
  await dialog.getByLabel('Rate per second').press('Enter')
  await expect(dialog).toBeVisible()
  await expect(page).not.toHaveURL(/\/replays\/\d+$/)
  const typed = dialog.getByLabel('Number of messages to confirm')
  await typed.fill(String(COUNT - 1))
  await expect(start).toBeDisabled()
  await typed.fill(String(COUNT))
  await expect(start).toBeEnabled()
  await shots(page, 'replay-plan-confirm-count')
  await typed.press('Enter')
  await expect(page).toHaveURL(/\/replays\/\d+$/)
  jobId = page.url().split('/').pop()!
  await expect(page.getByTestId('job-status')).toHaveText('running')
})

test('a cancelled replay says what it replayed and cancelled, and its outcomes do not go stale', async ({ page }) => {
  test.setTimeout(90_000)
  // When the page first sees the job ended, and every request for its items: one must follow the end.
  let endedAt: number | null = null
  const itemRequests: number[] = []
  page.on('request', (r) => {
    if (new URL(r.url()).pathname === `/api/replays/${jobId}/items`) itemRequests.push(Date.now())
  })
  page.on('response', async (r) => {
    if (new URL(r.url()).pathname !== `/api/replays/${jobId}`) return
    const body = await r.json().catch(() => null)
    if (endedAt === null && body && !['pending', 'running'].includes(body.status)) endedAt = Date.now()
  })

  await page.goto(`/replays/${jobId}`)
  await expect(page.getByTestId('count-confirmed')).not.toHaveText('0')
  await expect(page.getByTestId('progress-outcome')).toContainText('to go')
  await page.getByRole('button', { name: 'Cancel…' }).click()
  await page.getByRole('dialog', { name: `Cancel replay #${jobId}?` }).getByRole('button', { name: 'Cancel replay' }).click()
  await expect(page.getByTestId('job-status')).toHaveText('cancelled')

  const confirmed = Number(await page.getByTestId('count-confirmed').textContent())
  const cancelled = Number(await page.getByTestId('count-cancelled').textContent())
  expect(confirmed + cancelled).toBe(COUNT)
  await expect(page.getByTestId('progress-outcome')).toHaveText(`${confirmed} replayed · ${cancelled} cancelled`)
  await expect(page.getByTestId('progress-percent')).toHaveText(`${Math.floor((confirmed / COUNT) * 100)}%`)

  // Without a reload: every row has its final outcome, fetched after the job ended.
  const table = page.getByRole('table', { name: 'Replay items' })
  await expect(table.locator('tbody tr[data-message-id]')).toHaveCount(COUNT)
  await expect(table.locator('tbody tr[data-item-status="in_flight"], tbody tr[data-item-status="pending"]')).toHaveCount(0)
  await expect(table.locator('tbody tr[data-item-status="cancelled"]')).toHaveCount(cancelled)
  expect(endedAt).not.toBeNull()
  expect(itemRequests.some((t) => t >= endedAt!)).toBe(true)
  await shots(page, 'replay-cancelled-outcome')

  await page.goto('/replays')
  const row = page.getByRole('table', { name: 'Replays' }).locator(`tr[data-job-id="${jobId}"]`)
  await expect(row.getByTestId('job-outcome')).toHaveText(`${confirmed} replayed · ${cancelled} cancelled`)
  await expect(row.getByRole('progressbar')).toHaveAttribute('aria-valuetext', `${confirmed} replayed · ${cancelled} cancelled`)
  await shots(page, 'replays-list')
})

test("a replayed message's Replayed field names who, when and which job, as its banner and history do", async ({ page }) => {
  await page.goto(`/replays/${jobId}?status=confirmed`)
  const first = page.getByRole('table', { name: 'Replay items' }).locator('tbody tr[data-item-status="confirmed"]').first()
  await first.getByRole('link').first().click()
  await expect(page).toHaveURL(/\/messages\/\d+$/)
  await expect(page.getByTestId('status-note')).toContainText(`Replayed by ${E2E_ADMIN.email}`)
  const field = page.getByTestId('replayed-field')
  await expect(field).toContainText(`replay #${jobId} by ${E2E_ADMIN.email}`)
  await expect(field.getByRole('link', { name: `replay #${jobId}` })).toHaveAttribute('href', `/replays/${jobId}`)
  await expect(page.getByRole('table', { name: 'Replay history' }).locator(`tr[data-job-id="${jobId}"]`)).toHaveAttribute('data-status', 'confirmed')
  await shots(page, 'message-replayed-field')
})

test('a failed-queue target whose queue is gone is planned unroutable and cannot start', async ({ page }) => {
  await deleteWorkQueue()
  await page.goto(`/messages?q=${RUN}&status=dead`)
  await page.getByRole('table', { name: 'Messages' }).locator('tbody tr[data-message-id]').first().getByRole('link').first().click()
  await expect(page.getByTestId('replayed-field')).toContainText(`not replayed: cancelled in #${jobId}`)
  await page.getByRole('button', { name: 'Replay…' }).click()
  const dialog = page.getByRole('dialog', { name: 'Replay plan' })
  await dialog.getByRole('radio', { name: 'Failed queue only' }).check()
  await expect(dialog.getByRole('table', { name: 'Targets' })).toContainText('unroutable: no such queue')
  await expect(dialog.getByTestId('plan-warnings')).toContainText('will come back unroutable')
  await expect(dialog.getByRole('button', { name: 'Replay 1 message' })).toBeDisabled()
  await expect(dialog).toContainText('This plan cannot run as it stands')
  await shots(page, 'replay-plan-unroutable')
})
