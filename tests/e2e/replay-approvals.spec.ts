import { expect as baseExpect, type Browser, type APIRequestContext, type Page } from '@playwright/test'
import { signInAs, test } from './support/fixtures'
import { pollJson } from './support/api-json'
import amqp from 'amqplib'
import { shots as screens, type ShotOptions } from './support/screens'
import { AMQP_URL, declareWorkQueue, DLQ, rejectEach } from './support/dead-letter'
import { currentSlot } from './support/slots'

/*
 * Four eyes in the browser (docs/security.md#four-eyes): with the admin's policy asking approval for replays of more
 * than one message, operator A plans a replay of a group, sees why it needs approval and requests it; the job page
 * tells A a second person must approve; operator B opens the same page, approves with a comment, and the job runs to
 * the end. With the "edited messages" rule, the approver sees the diff of the edit the job froze before approving.
 * The policy is put back to off afterwards: every spec shares one server.
 */

const expect = baseExpect.configure({ timeout: 15_000 })

const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const REQUESTER = `e2e-requester-${RUN.toLowerCase()}@lazarus.test`
const APPROVER = `e2e-approver-${RUN.toLowerCase()}@lazarus.test`
const WORK = `e2e.approve.work.${RUN.toLowerCase()}`
const ERROR = `com.acme.e2e.Approve${RUN}Exception`
const OFF = { aboveMessages: null, editedMessages: false, customTarget: false, criticalSources: false, ttlSeconds: null }

/** Letters (1, 2 and 3 unless told) dead-lettered by the broker from a work queue into the drained DLQ (so they know their queue). */
async function deadLetter(numbers = [1, 2, 3]) {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await declareWorkQueue(channel, { work: WORK })
    for (const n of numbers) {
      channel.sendToQueue(WORK, Buffer.from(JSON.stringify({ orderId: `${RUN}-${n}` })), { contentType: 'application/json', messageId: `${RUN}-${n}`, headers: { 'x-error-type': ERROR, 'x-error-message': `order ${n} of ${RUN} failed` }, persistent: true })
    }
    await channel.waitForConfirms()
    await rejectEach(channel, WORK, numbers.length)
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

/** A fresh browser context signed in as a new operator. */
async function operatorPage(browser: Browser, request: APIRequestContext, email: string): Promise<Page> {
  const context = await browser.newContext({ storageState: { cookies: [], origins: [] }, viewport: { width: 1440, height: 900 } })
  const page = await context.newPage()
  await signInAs(page, request, email, { role: 'operator' })
  return page
}

test.describe.configure({ mode: 'serial' })

/** Screenshots at 1440 and 1024 px into test-results/screens/approvals, each checked to fit (support/screens.ts). */
const shots = (page: Page, name: string, options: ShotOptions = {}) => screens(page, `approvals/${name}`, options)

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

  // The job's own trail, asked by subject so other specs' entries cannot push it off the page.
  const jobActions = async () =>
    ((await pollJson(request, `/api/audit?subjectType=replay&subjectId=${jobId}&limit=50`))?.entries ?? []).map((e: { action: string }) => e.action)
  await expect
    .poll(jobActions, { timeout: 15_000 })
    .toEqual(expect.arrayContaining(['replay.approval-requested', 'replay.approved', 'replay.started', 'replay.finished']))
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

test('a replay of an edited message waits for approval; the approver sees the frozen diff on the job page', async ({ browser, request }) => {
  test.setTimeout(120_000)
  // The first test's replayed copies still wait in the work queue: dead-lettering through it must not fail them again.
  const connection = await amqp.connect(AMQP_URL)
  await (await connection.createChannel()).purgeQueue(WORK)
  await connection.close()
  await deadLetter([4, 5])
  // Letters 1 to 3 were replayed by the first test: the two new ones are the only dead ones.
  const deadOnes = async () => (((await pollJson(request, `/api/messages?q=${RUN}&limit=100`))?.messages ?? []) as { id: string; status: string }[]).filter((m) => m.status === 'dead')
  await expect.poll(async () => (await deadOnes()).length, { timeout: 30_000 }).toBe(2)
  const dead = await deadOnes()
  const ids = dead.map((m) => m.id).sort((a, b) => Number(a) - Number(b))
  const policy = await request.put('/api/settings/replay-approval', { data: { ...OFF, editedMessages: true } })
  expect(policy.status(), await policy.text()).toBe(200)
  // The admin fixes the amount of the first one; the original never changes.
  const edited = await request.post(`/api/messages/${ids[0]}/revisions`, { data: { body: { kind: 'json', text: JSON.stringify({ orderId: `${RUN}-4`, amount: 42 }, null, 2) } } })
  expect(edited.status(), await edited.text()).toBe(201)
  const editor = ((await edited.json()) as { revision: { createdBy: string } }).revision.createdBy
  const created = await request.post('/api/replays', { data: { selection: { ids }, target: { type: 'queue' } } })
  expect(created.status(), await created.text()).toBe(201)
  const job = (await created.json()) as { id: string; status: string }
  expect(job.status).toBe('awaiting_approval')
  const before = await workDepth()

  const approver = await operatorPage(browser, request, `e2e-edit-approver-${RUN.toLowerCase()}@lazarus.test`)
  await approver.goto(`/replays/${job.id}`)
  await expect(approver.getByTestId('job-status')).toHaveText('awaiting approval')
  await expect(approver.getByTestId('approval-reasons')).toContainText('it sends 1 edited message')
  const edits = approver.getByTestId('replay-edits')
  await expect(edits.locator('li')).toHaveCount(1)
  const row = edits.locator(`li[data-message-id="${ids[0]}"]`)
  await expect(row).toContainText('revision 1')
  await expect(row).toContainText(`by ${editor}`)
  const diff = row.getByTestId('edit-diff')
  await expect(diff).toContainText('+  "amount": 42')
  await expect(diff).toContainText(`-{"orderId":"${RUN}-4"}`)
  await expect(row.getByRole('link', { name: `#${ids[0]}` })).toHaveAttribute('href', `/messages/${ids[0]}`)
  // The diff folds away and back with the keyboard.
  await row.getByRole('button', { name: `Hide the diff of message ${ids[0]}` }).press('Enter')
  await expect(diff).toHaveCount(0)
  await row.getByRole('button', { name: `Show the diff of message ${ids[0]}` }).press('Enter')
  await expect(row.getByTestId('edit-diff')).toBeVisible()
  await approver.getByLabel('Comment (required, kept in the audit log)').fill('amount fixed, checked the diff')
  await shots(approver, 'replay-approval-edits-pending')

  await approver.getByRole('button', { name: 'Approve', exact: true }).click()
  await expect(approver.getByTestId('job-status')).toHaveText('completed', { timeout: 30_000 })
  await expect.poll(workDepth, { timeout: 15_000 }).toBe(before + 2)
  // Once it ran, the page still says what it sent.
  await expect(approver.getByTestId('replay-edits')).toContainText('revision 1')
  await approver.context().close()
})

test('the source form marks a source critical', async ({ page }) => {
  await page.goto('/sources')
  await page.locator(`tr[data-source="${DLQ}"]`).getByRole('button', { name: 'Edit' }).click()
  const critical = page.getByLabel(/^Critical/)
  await expect(critical).toBeVisible()
  await expect(critical).not.toBeChecked()
  await critical.scrollIntoViewIfNeeded()
  await shots(page, 'source-form-critical')
})

test('the replays list shows a job scheduled, one awaiting approval and one rejected, each with its state and when', async ({ browser, page, request }) => {
  test.setTimeout(120_000)
  const connection = await amqp.connect(AMQP_URL)
  await (await connection.createChannel()).purgeQueue(WORK)
  await connection.close()
  const deadIds = async () => (((await pollJson(request, `/api/messages?q=${RUN}&limit=100`))?.messages ?? []) as { id: string; status: string }[]).filter((m) => m.status === 'dead').map((m) => m.id)
  const before = new Set(await deadIds())
  await deadLetter([6, 7, 8])
  const newDeadIds = async () => (await deadIds()).filter((id) => !before.has(id)).sort((a, b) => Number(a) - Number(b))
  await expect.poll(async () => (await newDeadIds()).length, { timeout: 30_000 }).toBe(3)
  const ids = await newDeadIds()
  const create = async (id: string, extra: Record<string, unknown> = {}) => {
    const created = await request.post('/api/replays', { data: { selection: { ids: [id] }, target: { type: 'queue' }, ...extra } })
    expect(created.status(), await created.text()).toBe(201)
    return (await created.json()) as { id: string; status: string }
  }
  expect((await request.put('/api/settings/replay-approval', { data: OFF })).status()).toBe(200)
  const scheduled = await create(ids[0], { startAt: new Date(Date.now() + 3_600_000).toISOString() })
  expect(scheduled.status).toBe('scheduled')
  expect((await request.put('/api/settings/replay-approval', { data: { ...OFF, aboveMessages: 0 } })).status()).toBe(200)
  const waiting = await create(ids[1])
  const rejected = await create(ids[2])
  expect([waiting.status, rejected.status]).toEqual(['awaiting_approval', 'awaiting_approval'])
  const approver = await operatorPage(browser, request, `e2e-list-approver-${RUN.toLowerCase()}@lazarus.test`)
  const origin = currentSlot().url
  const reject = await approver.request.post(`/api/replays/${rejected.id}/reject`, { data: { comment: 'not during the sale' }, headers: { origin } })
  expect(reject.status(), await reject.text()).toBe(200)
  await approver.context().close()

  await page.goto('/replays')
  const row = (id: string) => page.getByRole('table', { name: 'Replays' }).locator(`tr[data-job-id="${id}"]`)
  await expect(row(scheduled.id).getByTestId('job-status')).toHaveText('scheduled')
  await expect(row(scheduled.id).getByTestId('job-when')).toHaveText(/^starts in (59m|1h)$/)
  await expect(row(waiting.id).getByTestId('job-status')).toHaveText('awaiting approval')
  await expect(row(waiting.id).getByTestId('job-when')).toHaveText(/^expires in \d+h$/)
  await expect(row(rejected.id).getByTestId('job-status')).toHaveText('rejected')
  await expect(row(rejected.id).getByTestId('job-when')).toContainText(/ago|just now/)
  // The status badges and the times are read whole at both widths.
  await shots(page, 'replays-list-waiting', { neverCut: '[data-testid="job-status"] > span, [data-testid="job-when"]' })
  // Nothing was published, and nothing is held: no message is marked replaying by a job that has not begun.
  expect(await workDepth()).toBe(0)
  expect(await newDeadIds()).toEqual(ids)

  // The filter by status finds the scheduled one alone.
  await page.getByRole('search', { name: 'Replay filters' }).getByLabel('Status').selectOption('scheduled')
  await expect(page).toHaveURL(/status=scheduled/)
  await expect(row(scheduled.id)).toBeVisible()
  await expect(row(waiting.id)).toHaveCount(0)

  for (const job of [scheduled, waiting]) expect((await request.post(`/api/replays/${job.id}/cancel`)).status()).toBe(200)
})
