import { expect as baseExpect } from '@playwright/test'
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { createTestStream, natsConnection, runFailingConsumer, type TestStream } from '../helpers/nats'
import { test } from './support/fixtures'
import { shot } from './support/screens'

/*
 * A JetStream source, from the browser: an admin adds a stream's consumer on the sources page, a consumer gives up on
 * a message after max_deliver, and the failure shows up as the source's first stored message, readable with its NATS
 * facts (docs/jetstream.md). The servers' advisory stream (serve.sh) is removed at the end.
 */
const expect = baseExpect.configure({ timeout: 15_000 })
const ADVISORY_STREAM = process.env.E2E_NATS_ADVISORY_STREAM ?? 'LZE2E_ADVISORIES'

type Source = { id: string; queue: string; kind: string; drained: number }

test.describe.configure({ mode: 'serial' })

let nc: NatsConnection
let jsm: JetStreamManager
const streams: TestStream[] = []

test.beforeAll(async () => {
  nc = await natsConnection()
  jsm = await jetstreamManager(nc)
})

test.afterAll(async ({ request }) => {
  // Disabled first: a server capturing for them would make its advisory stream again.
  const sources = ((await (await request.get('/api/sources')).json()).sources as Source[]).filter((s) => s.kind === 'jetstream')
  for (const source of sources) await request.patch(`/api/sources/${source.id}`, { data: { enabled: false } })
  for (const stream of streams) await stream.drop()
  await jsm.streams.delete(ADVISORY_STREAM).catch(() => false)
  await nc.close()
})

for (const width of [1440, 1024]) {
  test(`a JetStream source at ${width} px: added on the sources page, its failure captured and readable`, async ({ page, request }) => {
    await page.setViewportSize({ width, height: 900 })
    const stream = await createTestStream(jsm, { prefix: 'E2E_ORDERS' })
    streams.push(stream)
    // The application's consumer exists before the source names it (Lazarus checks that it does).
    await runFailingConsumer(nc, { stream: stream.name, consumer: 'billing', maxDeliver: 2, messages: [], fails: () => 'ack' })

    await page.goto('/sources')
    const form = page.getByRole('form', { name: 'Add a source' })
    await form.getByLabel('Broker').selectOption('jetstream')
    await form.getByLabel('Stream').fill('NO_SUCH_STREAM')
    await form.getByRole('button', { name: 'Add source' }).click()
    await expect(form.getByText('stream "NO_SUCH_STREAM" not found on the NATS server')).toBeVisible()
    await form.getByLabel('Stream').fill(stream.name)
    await form.getByLabel('Consumer').fill('billing')
    await shot(page, `sources-add-jetstream-${width}`)
    await form.getByRole('button', { name: 'Add source' }).click()
    await expect(form.getByText('Added; failures are captured from now on.')).toBeVisible()
    const row = page.getByRole('table', { name: 'Sources' }).locator(`tr[data-source="${stream.name}/billing"]`)
    await expect(row).toContainText('JetStream')

    // The capture starts with the source: wait until its consumer is in place, then fail a message.
    const source = ((await (await request.get('/api/sources')).json()).sources as Source[]).find((s) => s.queue === `${stream.name}/billing`)!
    expect(source.kind).toBe('jetstream')
    await expect.poll(async () => (await jsm.consumers.info(ADVISORY_STREAM, `lazarus-e2e-${new URL(page.url()).port}`).catch(() => null)) !== null, { timeout: 30_000 }).toBe(true)
    await runFailingConsumer(nc, {
      stream: stream.name, consumer: 'billing', maxDeliver: 2, fails: () => 'nak',
      messages: [{ subject: `${stream.subject}.refund`, data: new TextEncoder().encode('{"refundId":"r-17","<b>":"not markup"}'), headers: [['Nats-Error-Type', 'RefundRejected'], ['Nats-Error-Message', 'refund r-17 exceeds the order total']] }],
    })
    await expect
      .poll(async () => ((await (await request.get('/api/sources')).json()).sources as Source[]).find((s) => s.id === source.id)?.drained ?? 0, { timeout: 30_000 })
      .toBe(1)
    await page.reload()
    await expect(row.getByTestId('depth')).toHaveText('—')
    // The server's facts under the row (docs/jetstream.md#the-source-page): where the advisories are kept, what waits
    // for capture, what the stream's retention leaves of a terminated message, and whether removal is on.
    const facts = page.getByRole('table', { name: 'Sources' }).locator(`tr[data-facts-of="${stream.name}/billing"]`)
    await expect(facts).toContainText(`Advisories ${ADVISORY_STREAM} (Lazarus\u2019 own stream`)
    await expect(facts).toContainText('Waiting for capture 0')
    await expect(facts).toContainText('Retention limits: a terminated message stays until the limits remove it')
    await expect(facts).toContainText('Removal off')
    await shot(page, `sources-jetstream-${width}`)

    // Removal after capture: an admin's setting, turned on after a confirmation that says what it does.
    await row.getByRole('button', { name: 'Edit' }).click()
    await page.getByLabel('Delete each captured message from the stream once stored').click()
    const confirm = page.getByRole('dialog', { name: `Delete captured messages from ${stream.name}?` })
    await expect(confirm).toContainText('the stream\u2019s own copy is gone, for every consumer and tool that reads the stream')
    await shot(page, `sources-jetstream-removal-${width}`)
    await confirm.getByRole('button', { name: 'Delete once stored' }).click()
    await expect(confirm).toBeHidden()
    await expect(facts).toContainText('Removal on: deleted from the stream once stored')
    await expect(page.getByLabel('Delete each captured message from the stream once stored')).toBeChecked()

    const messages = (await (await request.get(`/api/messages?source=${source.id}`)).json()).messages as { id: string }[]
    expect(messages).toHaveLength(1)
    // The list's JetStream filters (shown once a JetStream source exists): its stream, and its subject by wildcard.
    await page.goto(`/messages?stream=${stream.name}&subject=${stream.subject}.*`)
    await expect(page.getByRole('textbox', { name: 'Stream' })).toHaveValue(stream.name)
    await expect(page.getByRole('textbox', { name: 'Subject' })).toHaveValue(`${stream.subject}.*`)
    await expect(page.getByRole('table', { name: 'Messages' }).locator('tbody tr[data-message-id]')).toHaveCount(1)
    await shot(page, `messages-jetstream-filters-${width}`)
    await page.goto(`/messages/${messages[0].id}`)
    await expect(page.getByText('refund r-17 exceeds the order total').first()).toBeVisible()
    await expect(page.getByText(`${stream.subject}.refund`).first()).toBeVisible()
    // No exchange and no x-death where there are none: the subject, and where the failure came from.
    await expect(page.getByText('none: JetStream')).toBeVisible()
    await expect(page.getByText('JetStream keeps no x-death')).toBeVisible()
    await expect(page.getByText('<b>', { exact: false }).first()).toBeVisible()
    await shot(page, `message-jetstream-${width}`)

    // Replayed back to its subject through JetStream (docs/jetstream.md#replay): the plan names the stream that stores
    // the copy and the consumers that read it; the stream then holds the original and the copy.
    await page.getByRole('button', { name: 'Replay…' }).click()
    const dialog = page.getByRole('dialog', { name: 'Replay plan' })
    await expect(dialog.getByRole('radio', { name: 'Original subject' })).toBeChecked()
    const targets = dialog.getByRole('table', { name: 'Targets' })
    await expect(targets).toContainText('JetStream')
    await expect(targets).toContainText(stream.name)
    await expect(targets).toContainText(`${stream.subject}.refund`)
    await expect(targets).toContainText('1 consumer')
    await shot(page, `replay-plan-jetstream-${width}`)
    await dialog.getByRole('button', { name: 'Replay 1 message' }).click()
    await expect(page).toHaveURL(/\/replays\/\d+$/)
    await expect(page.getByTestId('count-confirmed')).toHaveText('1', { timeout: 30_000 })
    expect((await jsm.streams.info(stream.name)).state.messages).toBe(2)
    await shot(page, `replay-jetstream-${width}`)
  })
}
