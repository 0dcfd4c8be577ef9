import { expect as baseExpect, type APIRequestContext, type Locator, type Page } from '@playwright/test'
import amqp from 'amqplib'
import { E2E_ADMIN, test } from './support/fixtures'
import { getJson, pollJson } from './support/api-json'
import { shots as screens, type ShotOptions } from './support/screens'
import { AMQP_URL, declareWorkQueue, DLQ, rejectEach } from './support/dead-letter'

/*
 * What a replay says about itself (issue 16), end to end:
 * - defect 16: from the admin's large-replay size (Settings) a replay starts only once its count is typed; Enter
 *   alone does nothing;
 * - defect 2: a job's per-message outcomes refresh while it runs and once more when it ends (cancelled or completed),
 *   without a reload;
 * - defect 3: a cancelled job says "N replayed · M cancelled", never "100% · 72 of 72 done";
 * - defect 14: a replayed message's "Replayed" field names the job, who and when, as its banner and history do;
 * - defect 5: a custom target of the default exchange with an empty routing key is planned unroutable and cannot start.
 *
 * Every spec shares one server, one database and the source queue e2e.dlq (tests/e2e/serve.sh): this one makes every
 * name unique to its run, finds its messages by the run's marker, and puts the large-replay size back as it found it.
 * Its messages are dead-lettered by RabbitMQ itself: published to a work queue whose dead-letter route leads to e2e.dlq,
 * and rejected there, as replay.spec.ts does.
 */

// Two cores shared with the server, PostgreSQL and RabbitMQ: allow a loaded machine some slack.
const expect = baseExpect.configure({ timeout: 15_000 })

const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const EXCHANGE = `e2e.outcome.${RUN.toLowerCase()}`
const WORK = `e2e.outcome.work.${RUN.toLowerCase()}`
const KEY = `order.outcome.${RUN.toLowerCase()}`
const ERROR = `com.acme.e2e.Outcome${RUN}Exception`
// Messages whose x-death names an empty queue (a publisher wrote it): the default exchange with an empty key is their
// own failed queue, so only routing can refuse it.
const NOWHERE_ERROR = `com.acme.e2e.Nowhere${RUN}Exception`
const NOWHERE_COUNT = 2
// Replayed at one a second: a minute and a half, long enough on a loaded machine to watch its outcomes move, take
// screenshots and cancel it part way.
const COUNT = 90
const COUNT_ESTIMATE = '1 min 30 s'
// A second, shorter job of messages the cancel left dead: long enough for its page to open while it runs.
const AGAIN = 15

type Message = { id: string; groupId: string; errorType: string | null; status: string }

/** Publishes COUNT letters through EXCHANGE into WORK, whose dead-letter route leads to the DLQ, and rejects each there. */
async function deadLetterThroughWorkQueue() {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await declareWorkQueue(channel, { work: WORK, exchange: EXCHANGE, key: KEY })
    for (let n = 1; n <= COUNT; n++) {
      const headers = { 'x-error-type': ERROR, 'x-error-message': `order ${n} of ${RUN} failed`, 'x-service': 'orders' }
      channel.publish(EXCHANGE, KEY, Buffer.from(JSON.stringify({ n, run: RUN })), { contentType: 'application/json', messageId: `${RUN}-outcome-${n}`, headers, persistent: true })
    }
    await channel.waitForConfirms()
    // rejectEach ends with a round trip on the channel: nacks sent just before a close are lost, and the letters
    // requeued into WORK (why the first version of this spec never saw its messages).
    expect(await rejectEach(channel, WORK, COUNT)).toBe(0)
    // Nothing consumes WORK from now on: the replayed copies wait there until the spec deletes it.
    await channel.close()
    // Straight into the DLQ: dead letters whose x-death names an empty queue and the default exchange.
    const direct = await connection.createConfirmChannel()
    for (let n = 1; n <= NOWHERE_COUNT; n++) {
      const headers = {
        'x-error-type': NOWHERE_ERROR,
        'x-error-message': `order ${n} of ${RUN} went nowhere`,
        'x-death': [{ queue: '', reason: 'rejected', count: 1, exchange: '', 'routing-keys': [''], time: { '!': 'timestamp', value: Math.floor(Date.now() / 1000) } }],
      }
      direct.sendToQueue(DLQ, Buffer.from(JSON.stringify({ n, run: RUN, nowhere: true })), { contentType: 'application/json', messageId: `${RUN}-nowhere-${n}`, headers, persistent: true })
    }
    await direct.waitForConfirms()
  } finally {
    await connection.close()
  }
}

async function deleteWorkQueue() {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createChannel()
    await channel.deleteQueue(WORK)
    await channel.deleteExchange(EXCHANGE)
  } finally {
    await connection.close()
  }
}

/** This run's messages, newest first (the list's order). */
async function runMessages(request: APIRequestContext, status?: string): Promise<Message[] | undefined> {
  return (await pollJson<{ messages: Message[] }>(request, `/api/messages?q=${RUN}&limit=100${status ? `&status=${status}` : ''}`))?.messages
}

/** Texts that must be read whole: times with their zone, and what a job did ("31 replayed · 9 cancelled"). */
const NEVER_CUT = '[data-column="at"], [data-column="created"], [data-column="when"], [data-testid="job-outcome"], [data-testid="progress-outcome"]'

/** Rows of the job's outcome table, by outcome. */
const itemRows = (page: Page, status?: string): Locator =>
  page.getByRole('table', { name: 'Replay items' }).locator(status ? `tbody tr[data-item-status="${status}"]` : 'tbody tr[data-message-id]')

/**
 * Records, in the order the browser reported them, the page's answers from GET /api/replays/{id} and its requests for
 * the job's items: the outcomes on screen are current only if the items were asked for after the first answer that
 * said the job had ended. (The order of Playwright's events, not clock times: reading a response's body takes a round
 * trip to the browser, during which the page may already have asked for the items.)
 */
function watchJob(page: Page, jobId: string) {
  const events: ({ kind: 'items' } | { kind: 'job'; status: Promise<string | undefined> })[] = []
  page.on('request', (r) => {
    if (new URL(r.url()).pathname === `/api/replays/${jobId}/items`) events.push({ kind: 'items' })
  })
  page.on('response', (r) => {
    if (new URL(r.url()).pathname !== `/api/replays/${jobId}`) return
    events.push({ kind: 'job', status: r.json().then((b: { status?: string }) => b?.status, () => undefined) })
  })
  return {
    /** Items were requested after the page learned that the job ended. */
    async refetchedAfterEnd(): Promise<boolean> {
      const statuses = await Promise.all(events.map((e) => (e.kind === 'job' ? e.status : undefined)))
      const ended = events.findIndex((e, i) => e.kind === 'job' && statuses[i] !== undefined && !['pending', 'running'].includes(statuses[i]!))
      return ended >= 0 && events.slice(ended + 1).some((e) => e.kind === 'items')
    },
  }
}

let originalLargeJobMessages: number | null = null
const ids = { job: '', group: '', nowhereGroup: '', again: [] as string[], cancelled: 0 }

async function restoreLargeReplaySize(request: APIRequestContext) {
  if (originalLargeJobMessages === null) return
  const restored = await request.put('/api/settings/replay-confirm', { data: { largeJobMessages: originalLargeJobMessages } })
  expect(restored.status(), await restored.text()).toBe(200)
  originalLargeJobMessages = null
}

test.describe.configure({ mode: 'serial' })

/** Screenshots at 1440 and 1024 px into test-results/screens/replay, each checked to fit (support/screens.ts). */
const shots = (page: Page, name: string, options: ShotOptions = {}) => screens(page, `replay/${name}`, { neverCut: NEVER_CUT, ...options })

test.beforeAll(async ({ request }) => {
  test.setTimeout(90_000)
  await deadLetterThroughWorkQueue()
  await expect.poll(async () => (await runMessages(request))?.length, { timeout: 30_000 }).toBe(COUNT + NOWHERE_COUNT)
  const messages = (await runMessages(request))!
  ids.group = messages.find((m) => m.errorType === ERROR)!.groupId
  ids.nowhereGroup = messages.find((m) => m.errorType === NOWHERE_ERROR)!.groupId
  expect(messages.filter((m) => m.groupId === ids.group)).toHaveLength(COUNT)
  expect(ids.nowhereGroup).not.toBe(ids.group)
})

test.afterAll(async ({ request }) => {
  // Later specs start replays with a plain Enter or without confirmCount: the size goes back even after a failure.
  await restoreLargeReplaySize(request)
  await deleteWorkQueue()
})

test('defect 16: from the admin-set size, a replay starts only once its count is typed', async ({ page, request }) => {
  test.setTimeout(90_000)
  originalLargeJobMessages = (await getJson<{ largeJobMessages: number }>(request, '/api/settings/replay-confirm')).largeJobMessages
  expect(originalLargeJobMessages).toBeGreaterThan(0)

  // The admin sets the size to exactly this replay's count: "at or above" needs the count typed.
  await page.goto('/settings')
  const size = page.getByLabel('Large replay size (messages)')
  await expect(size).toHaveValue(String(originalLargeJobMessages))
  await size.fill(String(COUNT))
  await size.press('Enter')
  await expect(page.getByText(`Set by ${E2E_ADMIN.email}`)).toBeVisible()
  await expect.poll(async () => (await pollJson(request, '/api/settings/replay-confirm'))?.largeJobMessages).toBe(COUNT)

  await page.goto(`/groups/${ids.group}`)
  await page.getByRole('button', { name: 'Replay group…' }).click()
  const dialog = page.getByRole('dialog', { name: 'Replay plan' })
  await dialog.getByRole('radio', { name: 'Failed queue only' }).check()
  await dialog.getByLabel('Rate per second').fill('1')
  await expect(dialog.getByTestId('plan-replayable')).toHaveText(String(COUNT))
  await expect(dialog.getByTestId('plan-estimate')).toHaveText(COUNT_ESTIMATE)
  await expect(dialog.getByRole('table', { name: 'Targets' })).toContainText(WORK)
  await expect(dialog.getByTestId('confirm-count')).toContainText(`Type ${COUNT} to confirm`)
  const start = dialog.getByRole('button', { name: `Replay ${COUNT} messages` })
  await expect(start).toBeDisabled()

  // Enter alone (from the rate field, where it confirms a small replay) starts nothing.
  await dialog.getByLabel('Rate per second').press('Enter')
  await expect(dialog).toBeVisible()
  await expect(page).toHaveURL(new RegExp(`/groups/${ids.group}$`))
  // A wrong count does not either; the right one does.
  const typed = dialog.getByLabel('Number of messages to confirm')
  await typed.fill(String(COUNT - 1))
  await expect(start).toBeDisabled()
  await typed.press('Enter')
  await expect(dialog).toBeVisible()
  await typed.fill(String(COUNT))
  await expect(start).toBeEnabled()
  await shots(page, 'replay-plan-confirm-count', { dialog: true })
  // Nothing was created meanwhile: the job list holds no job of this group yet.
  const jobs = (await getJson<{ replays: { selection: { groupId?: string } | null }[] }>(request, '/api/replays?limit=200')).replays
  expect(jobs.filter((j) => j.selection?.groupId === ids.group)).toHaveLength(0)

  await typed.press('Enter')
  await expect(page).toHaveURL(/\/replays\/\d+$/)
  ids.job = page.url().split('/').pop()!
  await expect(page.getByTestId('job-status')).toHaveText('running')
  await restoreLargeReplaySize(request)
})

test('defects 2 and 3: a cancelled replay says what it replayed and cancelled, and its outcomes do not go stale', async ({ page }) => {
  test.setTimeout(120_000)
  expect(ids.job, 'the job of the previous test').not.toBe('')
  await page.goto(`/replays/${ids.job}`)
  const watch = watchJob(page, ids.job)
  await expect(page.getByTestId('job-status')).toHaveText('running')
  await expect(itemRows(page)).toHaveCount(COUNT)

  // While it runs the outcomes move without a reload: more rows turn confirmed.
  await expect.poll(async () => itemRows(page, 'confirmed').count()).toBeGreaterThan(0)
  const before = await itemRows(page, 'confirmed').count()
  await expect.poll(async () => itemRows(page, 'confirmed').count()).toBeGreaterThan(before)
  await expect(page.getByTestId('progress-outcome')).toContainText('to go')
  await shots(page, 'replay-job-running')

  await page.getByRole('button', { name: 'Cancel…' }).click()
  await page.getByRole('dialog', { name: `Cancel replay #${ids.job}?` }).getByRole('button', { name: 'Cancel replay' }).click()
  await expect(page.getByTestId('job-status')).toHaveText('cancelled')

  const confirmed = Number(await page.getByTestId('count-confirmed').textContent())
  const cancelled = Number(await page.getByTestId('count-cancelled').textContent())
  expect(confirmed).toBeGreaterThan(before)
  // Enough left dead for the next tests (a second replay of AGAIN, one message left to plan again).
  expect(cancelled).toBeGreaterThan(AGAIN)
  expect(confirmed + cancelled).toBe(COUNT)
  ids.cancelled = cancelled
  // Defect 3: what it did, in words that add up; the percentage is the share replayed.
  await expect(page.getByTestId('progress-outcome')).toHaveText(`${confirmed} replayed · ${cancelled} cancelled`)
  await expect(page.getByTestId('progress-percent')).toHaveText(`${Math.floor((confirmed / COUNT) * 100)}%`)

  // Defect 2: without a reload every row has its final outcome, fetched after the job ended.
  await expect(itemRows(page)).toHaveCount(COUNT)
  await expect(itemRows(page, 'in_flight')).toHaveCount(0)
  await expect(itemRows(page, 'pending')).toHaveCount(0)
  await expect(itemRows(page, 'cancelled')).toHaveCount(cancelled)
  await expect(itemRows(page, 'confirmed')).toHaveCount(confirmed)
  expect(await watch.refetchedAfterEnd()).toBe(true)
  await shots(page, 'replay-job-cancelled')

  await page.goto('/replays')
  const row = page.getByRole('table', { name: 'Replays' }).locator(`tr[data-job-id="${ids.job}"]`)
  await expect(row.getByTestId('job-outcome')).toHaveText(`${confirmed} replayed · ${cancelled} cancelled`)
  await expect(row.getByRole('progressbar')).toHaveAttribute('aria-valuetext', `${confirmed} replayed · ${cancelled} cancelled`)
  await shots(page, 'replays-list')
})

test('defect 2: a completed replay fetches its outcomes once more when it ends', async ({ page, request }) => {
  test.setTimeout(90_000)
  const dead = (await runMessages(request, 'dead'))!.filter((m) => m.groupId === ids.group)
  expect(dead.length).toBeGreaterThan(AGAIN)
  ids.again = dead.slice(0, AGAIN).map((m) => m.id)
  const created = await request.post('/api/replays', { data: { selection: { ids: ids.again }, target: { type: 'queue' }, ratePerSecond: 1 } })
  expect(created.status(), await created.text()).toBe(201)
  const jobId = ((await created.json()) as { id: string }).id
  await page.goto(`/replays/${jobId}`)
  const watch = watchJob(page, jobId)
  // Seen running first, so the page itself watches it end.
  await expect(page.getByTestId('job-status')).toHaveText('running')
  await expect(page.getByTestId('job-status')).toHaveText('completed', { timeout: 30_000 })
  await expect(page.getByTestId('progress-outcome')).toHaveText(`${AGAIN} replayed`)
  await expect(itemRows(page, 'confirmed')).toHaveCount(AGAIN)
  await expect(itemRows(page, 'in_flight')).toHaveCount(0)
  await expect(itemRows(page, 'pending')).toHaveCount(0)
  expect(await watch.refetchedAfterEnd()).toBe(true)
})

test("defect 14: a replayed message's Replayed field names the job, who and when, as its banner and history do", async ({ page }) => {
  await page.goto(`/replays/${ids.job}?status=confirmed`)
  await itemRows(page, 'confirmed').first().getByRole('link').first().click()
  await expect(page).toHaveURL(/\/messages\/\d+$/)
  await expect(page.getByTestId('status-note')).toContainText(`Replayed by ${E2E_ADMIN.email}`)
  const field = page.getByTestId('replayed-field')
  await expect(field).toContainText(`replay #${ids.job} by ${E2E_ADMIN.email}`)
  await expect(field.getByRole('link', { name: `replay #${ids.job}` })).toHaveAttribute('href', `/replays/${ids.job}`)
  await expect(page.getByRole('table', { name: 'Replay history' }).locator(`tr[data-job-id="${ids.job}"]`)).toHaveAttribute('data-status', 'confirmed')
  await shots(page, 'message-replayed')

  // A message the cancel left dead (and the second job did not replay) says so, and in which job.
  await page.goto(`/replays/${ids.job}?status=cancelled`)
  await expect(itemRows(page)).toHaveCount(ids.cancelled)
  const cancelled = await itemRows(page, 'cancelled').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-message-id')!))
  const stillDead = cancelled.find((id) => !ids.again.includes(id))!
  await page.goto(`/messages/${stillDead}`)
  await expect(page.getByTestId('replayed-field')).toContainText(`not replayed: cancelled in #${ids.job}`)
})

test('defect 5: a custom target of the default exchange with an empty routing key is planned unroutable and cannot start', async ({ page, request }) => {
  await page.goto(`/groups/${ids.nowhereGroup}`)
  await page.getByRole('button', { name: 'Replay group…' }).click()
  const dialog = page.getByRole('dialog', { name: 'Replay plan' })
  await dialog.getByRole('radio', { name: 'Custom' }).check()
  // Exchange and routing key left empty: the default exchange, to the queue named "" (none).
  await expect(dialog.getByLabel('Custom exchange')).toHaveValue('')
  await expect(dialog.getByLabel('Custom routing key')).toHaveValue('')
  const targets = dialog.getByRole('table', { name: 'Targets' })
  await expect(targets).toContainText('(default exchange)')
  await expect(targets).toContainText('unroutable: no such queue')
  await expect(targets).not.toContainText('1 queue')
  await expect(dialog.getByTestId('plan-replayable')).toHaveText(String(NOWHERE_COUNT))
  await expect(dialog.getByTestId('plan-warnings')).toContainText(`Nothing is bound to the default exchange for key "": its ${NOWHERE_COUNT} messages will come back unroutable`)
  const start = dialog.getByRole('button', { name: `Replay ${NOWHERE_COUNT} messages` })
  await expect(start).toBeDisabled()
  await expect(dialog).toContainText('This plan cannot run as it stands')
  await expect(dialog).not.toContainText('Every matched message can be replayed')
  // Enter does not start it either.
  await dialog.getByLabel('Custom routing key').press('Enter')
  await expect(dialog).toBeVisible()
  await expect(page).toHaveURL(new RegExp(`/groups/${ids.nowhereGroup}$`))
  await shots(page, 'replay-plan-unroutable', { dialog: true })

  // Nor does the API: 422, saying why, and the messages stay dead.
  const refused = await request.post('/api/replays', { data: { selection: { groupId: ids.nowhereGroup }, target: { type: 'custom', exchange: '', routingKey: '' } } })
  expect(refused.status()).toBe(422)
  expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('no queue is named ""')
  const left = (await runMessages(request, 'dead'))!.filter((m) => m.groupId === ids.nowhereGroup)
  expect(left).toHaveLength(NOWHERE_COUNT)
})
