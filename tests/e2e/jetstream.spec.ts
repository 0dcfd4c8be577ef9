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
    await shot(page, `sources-jetstream-${width}`)

    const messages = (await (await request.get(`/api/messages?source=${source.id}`)).json()).messages as { id: string }[]
    expect(messages).toHaveLength(1)
    await page.goto(`/messages/${messages[0].id}`)
    await expect(page.getByText('refund r-17 exceeds the order total').first()).toBeVisible()
    await expect(page.getByText(`${stream.subject}.refund`).first()).toBeVisible()
    // No exchange and no x-death where there are none: the subject, and where the failure came from.
    await expect(page.getByText('none: JetStream')).toBeVisible()
    await expect(page.getByText('JetStream keeps no x-death')).toBeVisible()
    await expect(page.getByText('<b>', { exact: false }).first()).toBeVisible()
    await shot(page, `message-jetstream-${width}`)
  })
}
