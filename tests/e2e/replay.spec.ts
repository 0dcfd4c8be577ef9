import { expect as baseExpect, type APIRequestContext, type Page } from '@playwright/test'
import { signInAs, test } from './support/fixtures'
import { pollJson } from './support/api-json'
import amqp from 'amqplib'
import { AMQP_URL, DLQ, rejectEach } from './support/dead-letter'
import { shot } from './support/screens'

/*
 * Replay and resolve end to end: messages dead-lettered by RabbitMQ itself (a consumer rejects them from a
 * work queue whose dead-letter route leads to the DLQ the server drains), then replayed from the group page
 * through the plan dialog, watched to 100% on the job page, and found replayed and audited; and a selection
 * resolved with a reason. Every spec shares one server and database: this one finds its data by a marker.
 */

// Two cores shared with the server, PostgreSQL and RabbitMQ: allow a loaded machine some slack.
const expect = baseExpect.configure({ timeout: 15_000 })

const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const OPERATOR = `e2e-operator-${RUN.toLowerCase()}@lazarus.test`
const EXCHANGE = `e2e.replay.${RUN.toLowerCase()}`
const WORK = `e2e.replay.work.${RUN.toLowerCase()}`
// A second queue bound to the same key: replaying to the source exchange would reach it too (a fan-out).
const AUDIT_COPY = `e2e.replay.copy.${RUN.toLowerCase()}`
const ROUTING_KEY = `order.created.${RUN.toLowerCase()}`
const REPLAY_ERROR = `com.acme.e2e.Replay${RUN}Exception`
const RESOLVE_ERROR = `com.acme.e2e.Resolve${RUN}Exception`
const CANCEL_ERROR = `com.acme.e2e.Cancel${RUN}Exception`
// Replayed at one a second: time enough to watch it run and cancel it before the end.
const CANCEL_COUNT = 20

type Letter = { body: unknown; headers: Record<string, unknown>; messageId: string }

const letter = (type: string, n: number): Letter => ({
  messageId: `${type}-${n}`,
  body: { orderId: `${RUN}-order-${n}`, n },
  headers: { 'x-error-type': type, 'x-error-message': `order ${n} of ${RUN} could not be placed`, 'x-service': 'orders', 'x-service-version': '2.1.0' },
})

/**
 * Publishes through a real exchange into a work queue that dead-letters into the DLQ, and rejects every
 * delivery there, so the broker writes the x-death headers and Lazarus learns the origin exchange and key.
 */
async function deadLetterThroughWorkQueue(letters: Letter[]) {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await channel.assertQueue(DLQ, { durable: true })
    await channel.assertExchange(EXCHANGE, 'topic', { durable: false, autoDelete: false })
    await channel.assertQueue(WORK, { durable: false, autoDelete: false, arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': DLQ } })
    await channel.assertQueue(AUDIT_COPY, { durable: false, autoDelete: false })
    await channel.bindQueue(WORK, EXCHANGE, 'order.created.*')
    for (const l of letters) {
      channel.publish(EXCHANGE, ROUTING_KEY, Buffer.from(JSON.stringify(l.body)), { contentType: 'application/json', messageId: l.messageId, headers: l.headers, persistent: true })
    }
    await channel.waitForConfirms()
    await rejectEach(channel, WORK, letters.length)
    // Bound only now, so it holds nothing but what a replay might send it.
    await channel.bindQueue(AUDIT_COPY, EXCHANGE, '#')
  } finally {
    await connection.close()
  }
}

async function queueDepths(): Promise<{ work: number; copy: number }> {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createChannel()
    const work = (await channel.checkQueue(WORK)).messageCount
    const copy = (await channel.checkQueue(AUDIT_COPY)).messageCount
    return { work, copy }
  } finally {
    await connection.close()
  }
}

/** The consumer fails them again: the replayed copies die a second time, back into the DLQ. */
async function rejectWorkQueue(count: number) {
  const connection = await amqp.connect(AMQP_URL)
  try {
    await rejectEach(await connection.createChannel(), WORK, count)
  } finally {
    await connection.close()
  }
}

const rows = (page: Page) => page.getByRole('table', { name: 'Messages' }).locator('tbody tr[data-message-id]')

let operatorCreated = false

/** Signs the page in as this run's operator (created once), whose name the jobs and the audit log show. */
async function setOperator(page: Page, request: APIRequestContext) {
  if (!operatorCreated) {
    await signInAs(page, request, OPERATOR, { role: 'operator' })
    operatorCreated = true
    return
  }
  // Each test's page starts signed in as the admin: this one signs in as the operator instead.
  await page.context().clearCookies()
  await page.goto('/sign-in')
  await page.getByLabel('E-mail address').fill(OPERATOR)
  await page.getByLabel('Password').fill(`pw-${OPERATOR}-long-enough`)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByRole('button', { name: `Signed in as ${OPERATOR}` })).toBeVisible()
}

test.describe.configure({ mode: 'serial' })

test.beforeAll(async ({ request }) => {
  test.setTimeout(120_000)
  await deadLetterThroughWorkQueue([...[1, 2, 3].map((n) => letter(REPLAY_ERROR, n)), ...Array.from({ length: CANCEL_COUNT }, (_, i) => letter(CANCEL_ERROR, i + 1))])
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createConfirmChannel()
  for (const l of [1, 2].map((n) => letter(RESOLVE_ERROR, n))) {
    channel.sendToQueue(DLQ, Buffer.from(JSON.stringify(l.body)), { contentType: 'application/json', messageId: l.messageId, headers: l.headers, persistent: true })
  }
  await channel.waitForConfirms()
  await connection.close()
  await expect
    .poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=100`))?.messages?.length, { timeout: 30_000 })
    .toBe(5 + CANCEL_COUNT)
})

test.afterAll(async () => {
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createChannel()
  for (const q of [WORK, AUDIT_COPY]) await channel.deleteQueue(q).catch(() => {})
  await channel.deleteExchange(EXCHANGE).catch(() => {})
  await connection.close().catch(() => {})
})

test('replay a group: read the plan, confirm, watch it reach 100%, see the messages replayed and audited', async ({ page, request }) => {
  test.setTimeout(120_000)
  await setOperator(page, request)

  await page.goto(`/?q=Replay${RUN}`)
  await page.getByRole('table', { name: 'Error groups' }).getByRole('link', { name: new RegExp(`Replay${RUN}Exception`) }).click()
  await expect(page).toHaveURL(/\/groups\/\d+$/)
  await expect(rows(page)).toHaveCount(3)

  // The plan: three matched, all replayable; the source exchange also reaches the copy queue.
  await page.getByRole('button', { name: 'Replay group…' }).click()
  const dialog = page.getByRole('dialog', { name: 'Replay plan' })
  await expect(dialog).toBeVisible()
  await expect(dialog.getByTestId('plan-matched')).toHaveText('3')
  await expect(dialog.getByTestId('plan-replayable')).toHaveText('3')
  await expect(dialog.getByTestId('plan-excluded')).toHaveText('0')
  const targets = dialog.getByRole('table', { name: 'Targets' })
  await expect(targets).toContainText(EXCHANGE)
  await expect(targets).toContainText('2 queues')
  await expect(dialog.getByTestId('fan-out-warning')).toContainText(AUDIT_COPY)
  await expect(dialog.getByRole('button', { name: 'Replay 3 messages' })).toBeDisabled()
  await shot(page, 'replay-plan-fan-out')

  // Choosing the failed queue re-plans: one queue, no warning, and the job can start.
  await dialog.getByRole('button', { name: 'Replay to the failed queue only' }).click()
  await expect(dialog.getByRole('radio', { name: 'Failed queue only' })).toBeChecked()
  await expect(targets).toContainText('1 queue')
  await expect(targets).toContainText(WORK)
  await expect(dialog.getByTestId('fan-out-warning')).toHaveCount(0)
  await dialog.getByLabel('Rate per second').fill('20')
  await expect(dialog.getByTestId('plan-estimate')).toHaveText('under 1 s')
  const confirm = dialog.getByRole('button', { name: 'Replay 3 messages' })
  await expect(confirm).toBeEnabled()
  await shot(page, 'replay-plan')

  // Enter confirms (from the rate field); the job page opens.
  await dialog.getByLabel('Rate per second').press('Enter')
  await expect(page).toHaveURL(/\/replays\/\d+$/)
  const jobId = page.url().split('/').pop()!
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(`Replay #${jobId}`)
  await expect(page.getByRole('progressbar', { name: 'Replay progress' })).toHaveAttribute('aria-valuenow', '100', { timeout: 30_000 })
  await expect(page.getByTestId('progress-percent')).toHaveText('100%')
  await expect(page.getByTestId('job-status')).toHaveText('completed')
  await expect(page.getByTestId('count-total')).toHaveText('3')
  await expect(page.getByTestId('count-confirmed')).toHaveText('3')
  await expect(page.getByTestId('count-unroutable')).toHaveText('0')
  const items = page.getByRole('table', { name: 'Replay items' }).locator('tbody tr[data-message-id]')
  await expect(items).toHaveCount(3)
  for (const item of await items.all()) await expect(item).toHaveAttribute('data-item-status', 'confirmed')
  await expect(page.getByText(`by ${OPERATOR}`)).toBeVisible()
  await shot(page, 'replay-job')

  // The status filter narrows the outcomes.
  await page.getByLabel('Item status').selectOption('unroutable')
  await expect(items).toHaveCount(0)
  await expect(page.getByText('No message with outcome “unroutable”.')).toBeVisible()
  await page.getByLabel('Item status').selectOption('confirmed')
  await expect(items).toHaveCount(3)

  // The broker holds them in the failed queue only.
  await expect.poll(queueDepths).toEqual({ work: 3, copy: 0 })

  // A message of the job: replayed, with its replay history.
  await items.first().getByRole('link').first().click()
  await expect(page).toHaveURL(/\/messages\/\d+$/)
  await expect(page.locator('header').getByText('replayed', { exact: true })).toBeVisible()
  const history = page.getByRole('table', { name: 'Replay history' })
  await expect(history.locator(`tr[data-job-id="${jobId}"]`)).toHaveAttribute('data-status', 'confirmed')
  await expect(page.getByRole('button', { name: 'Replay…' })).toBeDisabled()
  await shot(page, 'message-replayed')

  // Every message of the group is marked replayed in the list.
  await page.goto(`/messages?q=Replay${RUN}`)
  await expect(rows(page)).toHaveCount(3)
  for (const row of await rows(page).all()) await expect(row).toContainText('replayed')

  // The jobs list and the audit log.
  await page.goto('/replays')
  const job = page.getByRole('table', { name: 'Replays' }).locator(`tr[data-job-id="${jobId}"]`)
  await expect(job).toContainText('completed')
  await expect(job).toContainText(OPERATOR)
  await expect(job.getByRole('progressbar')).toHaveAttribute('aria-valuenow', '100')
  await shot(page, 'replays')

  await page.goto('/audit')
  await page.getByLabel('Action').selectOption('replay.created')
  await expect(page).toHaveURL(/action=replay\.created/)
  const entry = page.getByRole('table', { name: 'Audit log' }).locator('tr[data-action="replay.created"]', { has: page.getByRole('link', { name: `replay #${jobId}` }) })
  await expect(entry).toHaveCount(1)
  await expect(entry).toContainText(OPERATOR)
  await shot(page, 'audit-replay')
  await entry.getByRole('link', { name: `replay #${jobId}` }).click()
  await expect(page).toHaveURL(new RegExp(`/replays/${jobId}$`))

  // The consumer fails the replayed copies again: each new dead letter says so and links to its earlier copy.
  await rejectWorkQueue(3)
  await expect
    .poll(async () => (await (await page.request.get(`/api/messages?q=Replay${RUN}&status=dead&limit=100`)).json()).messages?.length, { timeout: 30_000 })
    .toBe(3)
  await page.goto(`/messages?q=Replay${RUN}&status=dead`)
  await rows(page).first().getByRole('link').first().click()
  const again = page.getByTestId('failed-again')
  await expect(again).toContainText('Failed again after replay')
  await expect(again.getByRole('link', { name: `#${jobId}` })).toBeVisible()
  await shot(page, 'message-failed-again')
  await again.getByRole('link', { name: /^message #\d+$/ }).click()
  await expect(page.getByRole('table', { name: 'Replay history' }).locator(`tr[data-job-id="${jobId}"]`)).toBeVisible()
})

test('a running replay shows live progress and can be cancelled', async ({ page, request }) => {
  test.setTimeout(90_000)
  await setOperator(page, request)
  await page.goto(`/?q=Cancel${RUN}`)
  await page.getByRole('table', { name: 'Error groups' }).getByRole('link', { name: new RegExp(`Cancel${RUN}Exception`) }).click()
  await page.getByRole('button', { name: 'Replay group…' }).click()
  const dialog = page.getByRole('dialog', { name: 'Replay plan' })
  await dialog.getByRole('radio', { name: 'Failed queue only' }).check()
  // One message a second: slow enough to watch, and to cancel half way.
  await dialog.getByLabel('Rate per second').fill('1')
  await expect(dialog.getByTestId('plan-estimate')).toHaveText(`${CANCEL_COUNT} s`)
  await dialog.getByRole('button', { name: `Replay ${CANCEL_COUNT} messages` }).click()
  await expect(page).toHaveURL(/\/replays\/\d+$/)
  const jobId = page.url().split('/').pop()!

  const progress = page.getByRole('progressbar', { name: 'Replay progress' })
  await expect(page.getByTestId('job-status')).toHaveText('running')
  await expect(page.getByTestId('count-confirmed')).not.toHaveText('0')
  const running = Number(await progress.getAttribute('aria-valuenow'))
  expect(running).toBeGreaterThan(0)
  expect(running).toBeLessThan(100)
  await expect(page.getByText('live · every second')).toBeVisible()
  // The bar pulses while the job runs, unless the browser asks for reduced motion, as these tests' browsers do
  // (playwright.config.ts): then nothing on the page animates.
  const pulse = progress.getByTestId('progress-pulse')
  const motion = () => pulse.evaluate((el) => [matchMedia('(prefers-reduced-motion: reduce)').matches, getComputedStyle(el).animationName])
  expect(await motion()).toEqual([true, 'none'])
  await page.emulateMedia({ reducedMotion: 'no-preference' })
  expect(await motion()).toEqual([false, 'pulse'])
  await page.emulateMedia({ reducedMotion: 'reduce' })
  await shot(page, 'replay-running')

  await page.getByRole('button', { name: 'Cancel…' }).click()
  const confirm = page.getByRole('dialog', { name: `Cancel replay #${jobId}?` })
  await expect(confirm).toContainText('go back to dead')
  await shot(page, 'replay-cancel-dialog')
  await page.keyboard.press('Enter')
  await expect(confirm).toHaveCount(0)
  await expect(page.getByTestId('job-status')).toHaveText('cancelled')
  await expect(page.getByRole('button', { name: 'Cancel…' })).toHaveCount(0)
  const confirmed = Number(await page.getByTestId('count-confirmed').textContent())
  const cancelled = Number(await page.getByTestId('count-cancelled').textContent())
  expect(confirmed).toBeGreaterThan(0)
  expect(cancelled).toBeGreaterThan(0)
  expect(confirmed + cancelled).toBe(CANCEL_COUNT)
  await page.getByLabel('Item status').selectOption('cancelled')
  await expect(page.getByRole('table', { name: 'Replay items' }).locator('tbody tr[data-message-id]')).toHaveCount(cancelled)
  await shot(page, 'replay-cancelled')

  // What was not published is dead again, and can be replayed later.
  await page.goto(`/messages?q=Cancel${RUN}&status=dead`)
  await expect(rows(page)).toHaveCount(cancelled)
  await page.goto(`/audit?action=replay.cancelled`)
  await expect(page.getByRole('table', { name: 'Audit log' }).locator('tr[data-action="replay.cancelled"]', { has: page.getByRole('link', { name: `replay #${jobId}` }) })).toContainText(OPERATOR)
})

test('resolve a selection with a reason, and everything matching a filter', async ({ page, request }) => {
  await setOperator(page, request)
  await page.goto(`/messages?q=Resolve${RUN}&limit=1`)
  await expect(rows(page)).toHaveCount(1)

  // One selected row: Esc closes the dialog, and the reason is required.
  await rows(page).first().getByRole('checkbox').click()
  await page.getByRole('button', { name: 'Resolve 1…' }).click()
  let dialog = page.getByRole('dialog', { name: 'Resolve without replaying' })
  await expect(dialog).toBeVisible()
  await expect(dialog.getByRole('button', { name: 'Resolve' })).toBeDisabled()
  await page.keyboard.press('Escape')
  await expect(dialog).toHaveCount(0)

  // All matching (2, one loaded): the selection travels as the filter.
  await page.getByRole('checkbox', { name: 'Select all loaded messages' }).check()
  await page.getByRole('button', { name: 'Select all 2 matching' }).click()
  await page.getByRole('button', { name: 'Resolve all 2…' }).click()
  dialog = page.getByRole('dialog', { name: 'Resolve without replaying' })
  await expect(dialog).toContainText('all 2 messages matching the filter')
  await dialog.getByRole('textbox').fill(`duplicate orders of ${RUN}`)
  await shot(page, 'resolve-dialog')
  await dialog.getByRole('textbox').press('Enter')
  const done = page.getByRole('dialog', { name: 'Resolved' })
  await expect(done.getByTestId('resolve-result')).toContainText('2 messages marked resolved')
  await page.keyboard.press('Enter')
  await expect(done).toHaveCount(0)
  await expect(page.getByTestId('selection-summary')).toHaveCount(0)
  await expect(rows(page).first()).toContainText('resolved')

  await rows(page).first().getByRole('link').first().click()
  await expect(page.getByTestId('status-note')).toContainText(`duplicate orders of ${RUN}`)
  await expect(page.getByTestId('status-note')).toContainText(OPERATOR)

  await page.goto('/audit?action=messages.resolved')
  const entry = page.getByRole('table', { name: 'Audit log' }).locator('tr[data-action="messages.resolved"]', { hasText: OPERATOR })
  await expect(entry.first()).toBeVisible()
  await shot(page, 'audit-resolved')
})
