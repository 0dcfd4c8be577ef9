import { expect as baseExpect, type APIRequestContext, type Locator, type Page } from '@playwright/test'
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib'
import { test } from './support/fixtures'
import { getJson, pollJson } from './support/api-json'
import { shots as screens, type ShotOptions } from './support/screens'
import { AMQP_URL, declareWorkQueue } from './support/dead-letter'

/*
 * Staged replays in the browser (issue 18, "Canary, then ramp, with automatic halt"), against a real application:
 * a consumer on a work queue that fails refunds (nack → the queue's dead-letter route → the DLQ the server drains),
 * so the replayed copies of refunds come back dead with x-lazarus-replay-id and halt the job.
 *
 * - The plan dialog for a group at the admin's "stage from" size offers staging switched on with its defaults; the
 *   window is edited to a few seconds and the job started, all by keyboard.
 * - The job page shows the stages, each canary message's state ("failed again", "no news yet", "window passed without
 *   failing"), the re-failures by group, live, then the halt; after the fix is "deployed", Resume (by keyboard) takes
 *   the job to the end.
 * - A second job halts and is cancelled (by keyboard): its unpublished messages are dead again.
 *
 * Every spec shares one server and database; this one makes its names unique to its run and puts the admin's sizes
 * back as it found them.
 */

// Two cores shared with the server, PostgreSQL and RabbitMQ: allow a loaded machine some slack.
const expect = baseExpect.configure({ timeout: 15_000 })

const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const EXCHANGE = `e2e.staged.${RUN.toLowerCase()}`
const WORK = `e2e.staged.work.${RUN.toLowerCase()}`
const KEY = `order.staged.${RUN.toLowerCase()}`
/** Two incidents, two error groups: the first is resumed after the fix, the second cancelled. */
const BATCHES = {
  resume: { error: `com.acme.e2e.StagedResume${RUN}Exception`, count: 40 },
  cancel: { error: `com.acme.e2e.StagedCancel${RUN}Exception`, count: 20 },
} as const
type Batch = keyof typeof BATCHES
/** Two orders in three are refunds, the type the application's bug fails: 7 of the default canary's first 10. */
const isRefund = (n: number) => n % 3 !== 0
const CANARY = 10
const CANARY_REFUNDS = Array.from({ length: CANARY }, (_, i) => i + 1).filter(isRefund).length
/** The admin's "stage from" size for this spec: both incidents are at or over it. */
const STAGED_FROM = 10
/** The window typed in the dialog: long enough to see "no news yet", short enough to see it pass. */
const WINDOW_S = 20

type Message = { id: string; groupId: string; errorType: string | null; status: string }

/**
 * The application: consumes the work queue, and rejects (so RabbitMQ dead-letters it into the DLQ) every delivery
 * while seeding, then the refunds of the batches whose bug is not fixed yet.
 */
const app = {
  connection: null as ChannelModel | null,
  channel: null as Channel | null,
  seeding: true,
  failing: new Set<Batch>(['resume', 'cancel']),
  rejected: 0,
}

function handle(msg: ConsumeMessage | null) {
  if (!msg || !app.channel) return
  const body = JSON.parse(msg.content.toString()) as { n: number; batch: Batch }
  if (app.seeding || (app.failing.has(body.batch) && isRefund(body.n))) {
    app.rejected++
    app.channel.nack(msg, false, false)
  } else app.channel.ack(msg)
}

async function startApplication() {
  app.connection = await amqp.connect(AMQP_URL)
  const channel = await app.connection.createConfirmChannel()
  app.channel = channel
  await declareWorkQueue(channel, { work: WORK, exchange: EXCHANGE, key: KEY })
  await channel.prefetch(20)
  await channel.consume(WORK, handle)
  const total = BATCHES.resume.count + BATCHES.cancel.count
  for (const batch of Object.keys(BATCHES) as Batch[]) {
    for (let n = 1; n <= BATCHES[batch].count; n++) {
      const kind = isRefund(n) ? 'refund' : 'order'
      // One message text for both kinds: the group's title is made of it, and each batch is one group.
      const headers = { 'x-error-type': BATCHES[batch].error, 'x-error-message': `order ${n} of ${RUN} failed`, 'x-service': 'orders' }
      channel.publish(EXCHANGE, KEY, Buffer.from(JSON.stringify({ n, batch, kind, run: RUN })), { contentType: 'application/json', messageId: `${RUN}-${batch}-${n}`, headers, persistent: true })
    }
  }
  await channel.waitForConfirms()
  await expect.poll(() => app.rejected, { timeout: 15_000 }).toBe(total)
  // A round trip on the channel: its nacks were all taken before anything else happens (see rejectEach in support/dead-letter.ts).
  expect((await channel.checkQueue(WORK)).messageCount).toBe(0)
  app.seeding = false
}

async function stopApplication() {
  const connection = app.connection
  if (!connection) return
  try {
    const channel = await connection.createChannel()
    await channel.deleteQueue(WORK)
    await channel.deleteExchange(EXCHANGE)
  } finally {
    await connection.close()
  }
}

/** This run's messages of one batch (by its error type). */
async function batchMessages(request: APIRequestContext, batch: Batch, status?: string): Promise<Message[] | undefined> {
  const list = (await pollJson<{ messages: Message[] }>(request, `/api/messages?q=${RUN}&limit=200${status ? `&status=${status}` : ''}`))?.messages
  return list?.filter((m) => m.errorType === BATCHES[batch].error)
}

/** Presses Tab until `target` has the focus: it is reachable by keyboard (at most `max` stops). */
async function tabTo(page: Page, target: Locator, max = 60) {
  for (let i = 0; i < max; i++) {
    if (await target.evaluate((el) => el === document.activeElement)) return
    await page.keyboard.press('Tab')
  }
  throw new Error(`not reached by Tab in ${max} stops: ${target.toString()}`)
}

/** The vertical position of `locator`'s top: the page must not shift while it polls. */
const topOf = async (locator: Locator) => (await locator.boundingBox())!.y

const canaryState = (page: Page, label: string) => page.getByRole('list', { name: 'Canary messages' }).getByTestId('canary-item').filter({ hasText: label })

let original: { largeJobMessages: number; stagedFromMessages: number } | null = null
const ids = { resumeGroup: '', cancelGroup: '', job: '' }

test.describe.configure({ mode: 'serial' })

/** Screenshots at 1440 and 1024 px into test-results/screens/staged, each checked to fit (support/screens.ts). */
const shots = (page: Page, name: string, options: ShotOptions = {}) => screens(page, `staged/${name}`, options)

test.beforeAll(async ({ request }) => {
  test.setTimeout(90_000)
  await startApplication()
  await expect.poll(async () => (await batchMessages(request, 'resume'))?.length, { timeout: 30_000 }).toBe(BATCHES.resume.count)
  await expect.poll(async () => (await batchMessages(request, 'cancel'))?.length, { timeout: 30_000 }).toBe(BATCHES.cancel.count)
  ids.resumeGroup = (await batchMessages(request, 'resume'))![0]!.groupId
  ids.cancelGroup = (await batchMessages(request, 'cancel'))![0]!.groupId
  // The admin stages replays from STAGED_FROM messages (the confirm-count size stays as it is).
  const before = await getJson<{ largeJobMessages: number; stagedFromMessages: number }>(request, '/api/settings/replay-confirm')
  original = { largeJobMessages: before.largeJobMessages, stagedFromMessages: before.stagedFromMessages }
  expect(original.largeJobMessages).toBeGreaterThan(BATCHES.resume.count)
  const set = await request.put('/api/settings/replay-confirm', { data: { largeJobMessages: original.largeJobMessages, stagedFromMessages: STAGED_FROM } })
  expect(set.status(), await set.text()).toBe(200)
})

test.afterAll(async ({ request }) => {
  if (original) {
    const restored = await request.put('/api/settings/replay-confirm', { data: original })
    expect(restored.status(), await restored.text()).toBe(200)
  }
  await stopApplication()
})

test('the plan dialog offers staging switched on with its defaults; the window is edited and the job started by keyboard', async ({ page }) => {
  test.setTimeout(90_000)
  await page.goto(`/groups/${ids.resumeGroup}`)
  const open = page.getByRole('button', { name: 'Replay group…' })
  await expect(open).toBeVisible()
  await tabTo(page, open)
  await page.keyboard.press('Enter')
  const dialog = page.getByRole('dialog', { name: 'Replay plan' })
  await expect(dialog.getByTestId('plan-replayable')).toHaveText(String(BATCHES.resume.count))

  // Offered switched on, with the defaults as placeholders and the stages they make.
  const stages = dialog.getByRole('region', { name: 'Stages' })
  const staged = stages.getByRole('checkbox', { name: /Stage this replay/ })
  await expect(staged).toBeChecked()
  await expect(stages).toContainText(`Offered for replays of ${STAGED_FROM} messages or more`)
  await expect(stages.getByLabel('Canary size')).toHaveAttribute('placeholder', String(CANARY))
  const window = stages.getByLabel('Observation window in seconds')
  // No retry tiers known for this DLQ (the topology doctor has not run): two minutes.
  await expect(window).toHaveAttribute('placeholder', '120')
  await expect(stages).toContainText('no tiers known: 2 min')
  await expect(stages.getByLabel('Ramp percentages')).toHaveAttribute('placeholder', '10, 50, 100')
  await expect(stages.getByLabel('Halt threshold percent')).toHaveAttribute('placeholder', '10')
  await expect(stages.getByLabel('Halt minimum messages')).toHaveAttribute('placeholder', '5')
  // 40 messages: the canary (10), then 50 % (through 20), then the rest; 10 % falls inside the canary and is dropped.
  await expect(stages.getByTestId('planned-stage')).toHaveText([/Canary\s+10 messages/, /Stage 2\s+10 messages/, /Stage 3\s+20 messages/])
  await expect(stages.getByTestId('planned-stage').first()).toContainText('2 min window')

  // The window, typed by keyboard: the planned stages follow it once the plan is current.
  await tabTo(page, window)
  await page.keyboard.type(String(WINDOW_S))
  await expect(stages.getByTestId('planned-stage').first()).toContainText(`${WINDOW_S} s window`)
  const start = dialog.getByRole('button', { name: `Replay ${BATCHES.resume.count} messages` })
  await expect(start).toBeEnabled()
  await shots(page, 'plan-staged', { dialog: true })

  await page.keyboard.press('Enter')
  await expect(page).toHaveURL(/\/replays\/\d+$/)
  ids.job = page.url().split('/').pop()!
})

test('the job page shows the stages, the canary states and the re-failures live, then the halt; Resume after the fix completes it', async ({ page, request }) => {
  test.setTimeout(150_000)
  expect(ids.job, 'the job of the previous test').not.toBe('')
  await page.goto(`/replays/${ids.job}`)
  const panel = page.locator('section', { has: page.getByRole('heading', { name: 'Stages and re-failures' }) })
  await expect(panel).toBeVisible()
  await expect(panel.getByRole('list', { name: 'Stages' }).getByRole('listitem')).toHaveCount(3)
  await expect(panel.getByTestId('staging-terms')).toHaveText(`${WINDOW_S} s window after each stage · halts at 10 % failing again, at least 5 messages`)

  // The canary went out; the orders that are not refunds have not failed (yet): no news while the window runs.
  await expect(canaryState(page, 'no news yet').first()).toBeVisible()
  await expect(page.getByTestId('stage-0')).toContainText(/observing|halted/)
  await expect(page.getByTestId('stage-1')).toContainText('waiting')
  // The refunds come back dead: the count by group moves without a reload.
  await expect(canaryState(page, 'failed again').first()).toBeVisible()
  const byGroup = page.getByRole('list', { name: 'Re-failures by group' })
  await expect(byGroup).toContainText(`StagedResume${RUN}Exception`)

  // Halted in the canary: nothing more published, the evidence on the page.
  await expect(page.getByTestId('job-status')).toHaveText('halted', { timeout: 40_000 })
  const banner = page.getByTestId('halted-banner')
  await expect(banner).toContainText('Halted in the canary')
  await expect(banner).toContainText(new RegExp(`[5-7] of ${CANARY} replayed messages in the canary failed again`))
  await expect(page.getByTestId('count-published')).toHaveText(String(CANARY))
  await expect(page.getByTestId('stage-0')).toContainText('halted')
  await expect(page.getByTestId('stage-0-refailed')).toContainText(new RegExp(`[5-7] of ${CANARY} failed again`))
  await expect(page.getByTestId('stage-1-refailed')).toHaveText('nothing published yet')
  // The job's own copies that failed again are not "new messages of the same group" to replay.
  await expect(page.getByTestId('arrived-since')).toContainText('0 messages of the same group arrived since this replay was planned')
  // Every refund of the canary fails again, and once the window has passed the others say so.
  await expect(canaryState(page, 'failed again')).toHaveCount(CANARY_REFUNDS, { timeout: 30_000 })
  await expect(byGroup).toContainText(String(CANARY_REFUNDS))
  await expect(canaryState(page, 'window passed without failing')).toHaveCount(CANARY - CANARY_REFUNDS, { timeout: 30_000 })
  // Polling a halted job moves nothing on the page.
  const top = await topOf(panel)
  await page.waitForResponse((r) => new URL(r.url()).pathname === `/api/replays/${ids.job}/refailures`)
  await page.waitForResponse((r) => new URL(r.url()).pathname === `/api/replays/${ids.job}/refailures`)
  expect(await topOf(panel)).toBe(top)
  await shots(page, 'job-halted')

  // The fix is deployed; Resume, by keyboard.
  app.failing.delete('resume')
  const resume = banner.getByRole('button', { name: 'Resume' })
  await page.locator('body').focus()
  await tabTo(page, resume)
  await page.keyboard.press('Enter')
  await expect(page.getByTestId('job-status')).toHaveText(/running|completed/)
  await expect(banner).toHaveCount(0)
  // The canary's window has passed: stage 2 goes out and is watched for its own window.
  await expect(page.getByTestId('stage-1')).toContainText('observing', { timeout: 30_000 })
  await expect(page.getByTestId('stage-1-refailed')).toContainText('0 of 10 failed again')
  await expect(page.getByTestId('stage-1-refailed')).toContainText('next stage')
  await shots(page, 'job-running')
  await expect(page.getByTestId('job-status')).toHaveText('completed', { timeout: 90_000 })
  await expect(page.getByTestId('count-confirmed')).toHaveText(String(BATCHES.resume.count))
  for (const i of [0, 1, 2]) await expect(page.getByTestId(`stage-${i}`)).toContainText('done')
  const job = await getJson<{ staging: { halt: { outcome: string } } }>(request, `/api/replays/${ids.job}`)
  expect(job.staging.halt.outcome).toBe('resumed')
  await shots(page, 'job-resumed-completed')
})

test('a halted job cancelled by keyboard: its unpublished messages are dead again', async ({ page, request }) => {
  test.setTimeout(120_000)
  const created = await request.post('/api/replays', {
    data: { selection: { groupId: ids.cancelGroup }, target: { type: 'queue' }, staging: { windowSeconds: 60 } },
  })
  expect(created.status(), await created.text()).toBe(201)
  const jobId = ((await created.json()) as { id: string }).id
  await page.goto(`/replays/${jobId}`)
  await expect(page.getByTestId('job-status')).toHaveText('halted', { timeout: 40_000 })
  const banner = page.getByTestId('halted-banner')
  await expect(banner).toContainText('Halted in the canary')

  const cancel = banner.getByRole('button', { name: 'Cancel…' })
  await page.locator('body').focus()
  await tabTo(page, cancel)
  await page.keyboard.press('Enter')
  const confirm = page.getByRole('dialog', { name: `Cancel replay #${jobId}?` })
  await expect(confirm).toContainText(`${BATCHES.cancel.count - CANARY} of ${BATCHES.cancel.count} messages not yet published`)
  await tabTo(page, confirm.getByRole('button', { name: 'Cancel replay' }))
  await page.keyboard.press('Enter')
  await expect(page.getByTestId('job-status')).toHaveText('cancelled')
  await expect(banner).toHaveCount(0)
  await expect(page.getByTestId('count-cancelled')).toHaveText(String(BATCHES.cancel.count - CANARY))
  await expect(page.getByTestId('count-confirmed')).toHaveText(String(CANARY))

  // Back to dead: the messages the canary did not publish, besides the refunds' copies that failed again.
  const items = (await getJson<{ items: { messageId: string; status: string }[] }>(request, `/api/replays/${jobId}/items?status=cancelled&limit=100`)).items
  expect(items).toHaveLength(BATCHES.cancel.count - CANARY)
  const dead = new Set((await batchMessages(request, 'cancel', 'dead'))!.map((m) => m.id))
  for (const item of items) expect(dead.has(item.messageId), `message ${item.messageId} is dead again`).toBe(true)
  await shots(page, 'job-halted-cancelled')
})
