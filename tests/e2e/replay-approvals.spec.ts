import { expect as baseExpect, type Browser, type APIRequestContext, type Page } from '@playwright/test'
import { signInAs, test } from './support/fixtures'
import { pollJson } from './support/api-json'
import amqp from 'amqplib'

/*
 * Four eyes in the browser (docs/security.md#four-eyes): with the admin's policy asking approval for replays of more
 * than one message, operator A plans a replay of a group, sees why it needs approval and requests it; the job page
 * tells A a second person must approve; operator B opens the same page, approves with a comment, and the job runs to
 * the end. The policy is put back to off afterwards: every spec shares one server.
 */

const expect = baseExpect.configure({ timeout: 15_000 })

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = (process.env.E2E_SOURCES ?? 'e2e.dlq').split(',')[0]!
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const REQUESTER = `e2e-requester-${RUN.toLowerCase()}@lazarus.test`
const APPROVER = `e2e-approver-${RUN.toLowerCase()}@lazarus.test`
const WORK = `e2e.approve.work.${RUN.toLowerCase()}`
const ERROR = `com.acme.e2e.Approve${RUN}Exception`
const OFF = { aboveMessages: null, editedMessages: false, customTarget: false, criticalSources: false, ttlSeconds: null }

/** Three letters dead-lettered by the broker from a work queue into the drained DLQ (so they know their queue). */
async function deadLetter() {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await channel.assertQueue(DLQ, { durable: true })
    await channel.assertQueue(WORK, { durable: false, autoDelete: false, arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': DLQ } })
    for (const n of [1, 2, 3]) {
      channel.sendToQueue(WORK, Buffer.from(JSON.stringify({ orderId: `${RUN}-${n}` })), { contentType: 'application/json', messageId: `${RUN}-${n}`, headers: { 'x-error-type': ERROR, 'x-error-message': `order ${n} of ${RUN} failed` }, persistent: true })
    }
    await channel.waitForConfirms()
    let rejected = 0
    await new Promise<void>((resolve) => {
      void channel.consume(WORK, (msg) => {
        if (!msg) return
        channel.nack(msg, false, false)
        if (++rejected === 3) resolve()
      })
    })
    // A round trip after the nacks, so they reach the broker before the connection closes (else they are requeued).
    await channel.checkQueue(WORK)
  } finally {
    await connection.close()
  }
}

async function workDepth(): Promise<number> {
  const connection = await amqp.connect(AMQP_URL)
  try {
    return (await (await connection.createChannel()).checkQueue(WORK)).messageCount
  } finally {
    await connection.close()
  }
}

async function shots(page: Page, name: string) {
  for (const width of [1440, 1024]) {
    await page.setViewportSize({ width, height: 900 })
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({ path: `test-results/screens/${name}-${width}.png`, fullPage: true })
  }
  await page.setViewportSize({ width: 1440, height: 900 })
}

/** A fresh browser context signed in as a new operator. */
async function operatorPage(browser: Browser, request: APIRequestContext, email: string): Promise<Page> {
  const context = await browser.newContext({ storageState: { cookies: [], origins: [] }, viewport: { width: 1440, height: 900 } })
  const page = await context.newPage()
  await signInAs(page, request, email, { role: 'operator' })
  return page
}

test.describe.configure({ mode: 'serial' })

test.beforeAll(async ({ request }) => {
  test.setTimeout(120_000)
  await deadLetter()
  await expect.poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=100`))?.messages?.length, { timeout: 30_000 }).toBe(3)
  const policy = await request.put('/api/settings/replay-approval', { data: { ...OFF, aboveMessages: 1 } })
  expect(policy.status(), await policy.text()).toBe(200)
})

test.afterAll(async ({ request }) => {
  await request.put('/api/settings/replay-approval', { data: OFF })
  const connection = await amqp.connect(AMQP_URL)
  await (await connection.createChannel()).deleteQueue(WORK).catch(() => {})
  await connection.close().catch(() => {})
})

test('request approval as one operator, approve as another; the job then runs', async ({ browser, request }) => {
  test.setTimeout(120_000)
  const requester = await operatorPage(browser, request, REQUESTER)
  await requester.goto(`/?q=Approve${RUN}`)
  await requester.getByRole('table', { name: 'Error groups' }).getByRole('link', { name: new RegExp(`Approve${RUN}Exception`) }).click()
  await expect(requester).toHaveURL(/\/groups\/\d+$/)
  await requester.getByRole('button', { name: 'Replay group…' }).click()
  const dialog = requester.getByRole('dialog', { name: 'Replay plan' })
  await expect(dialog.getByTestId('plan-replayable')).toHaveText('3')
  await expect(dialog.getByTestId('plan-approval')).toContainText('Needs approval by a second operator: it publishes 3 messages, more than 1')
  const submit = dialog.getByRole('button', { name: 'Request approval' })
  await expect(submit).toBeEnabled()
  await shots(requester, 'replay-approval-plan')
  await submit.click()

  await expect(requester).toHaveURL(/\/replays\/\d+$/)
  const jobId = requester.url().split('/').pop()!
  await expect(requester.getByTestId('job-status')).toHaveText('awaiting approval')
  await expect(requester.getByTestId('approval-reasons')).toContainText('it publishes 3 messages, more than 1')
  await expect(requester.getByTestId('approval-expires')).toBeVisible()
  await expect(requester.getByTestId('approval-self-note')).toContainText('a second operator must approve it')
  await expect(requester.getByRole('button', { name: 'Approve', exact: true })).toHaveCount(0)
  await shots(requester, 'replay-approval-requester')
  // Nothing was published while it waits.
  expect(await workDepth()).toBe(0)

  const approver = await operatorPage(browser, request, APPROVER)
  await approver.goto(`/replays/${jobId}`)
  await expect(approver.getByTestId('job-status')).toHaveText('awaiting approval')
  await expect(approver.getByText(`Requested by`)).toBeVisible()
  await expect(approver.getByTestId('approval-facts')).toContainText(REQUESTER)
  const approve = approver.getByRole('button', { name: 'Approve', exact: true })
  await expect(approve).toBeDisabled()
  await approver.getByLabel('Comment (required, kept in the audit log)').fill('fix deployed in 2.1.1')
  await shots(approver, 'replay-approval-pending')
  await approve.click()
  await expect(approver.getByTestId('job-status')).toHaveText('completed', { timeout: 30_000 })
  await expect(approver.getByTestId('approval-facts')).toContainText(`${APPROVER} — “fix deployed in 2.1.1”`)
  await expect.poll(workDepth, { timeout: 15_000 }).toBe(3)
  await expect(approver.getByRole('table', { name: 'Replay items' }).locator('tbody tr[data-item-status="confirmed"]')).toHaveCount(3)
  await shots(approver, 'replay-approval-done')

  const audit = await pollJson(request, `/api/audit?limit=50`)
  const actions = (audit?.entries ?? []).filter((e: { subject: { id: string } }) => e.subject.id === jobId).map((e: { action: string }) => e.action)
  expect(actions).toEqual(expect.arrayContaining(['replay.approval-requested', 'replay.approved', 'replay.started', 'replay.finished']))
  await requester.context().close()
  await approver.context().close()
})

test('the admin edits the approval policy in Settings', async ({ page }) => {
  await page.goto('/settings')
  const form = page.getByRole('form', { name: 'Replay approval policy' })
  await expect(form.getByLabel('Approval above (messages)')).toHaveValue('1')
  await form.getByLabel('Approval above (messages)').fill('250')
  await form.getByLabel('Replays to a custom target').check()
  await form.getByLabel('Approval expiry (hours)').fill('abc')
  await expect(form.getByText('hours, up to 720')).toBeVisible()
  await form.getByLabel('Approval expiry (hours)').fill('8')
  await form.getByRole('button', { name: 'Save' }).click()
  await expect(page.getByText(/Set by e2e-admin@lazarus.test/)).toBeVisible()
  await form.scrollIntoViewIfNeeded()
  await shots(page, 'settings-replay-approval')
})
