import { expect as baseExpect, type Page } from '@playwright/test'
import { randomBytes } from 'node:crypto'
import { AckPolicy, JetStreamApiError, jetstreamManager, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { natsConnection } from '../helpers/nats'
import { test } from './support/fixtures'
import { expectFits, shot as screen } from './support/screens'

/*
 * The topology page's JetStream part in Chromium against the real nats-server (docs/jetstream.md#the-doctors-jetstream-findings):
 * streams and consumers built with traps, found by Run now beside the vhost's findings, drawn with the stream that
 * keeps their advisories, their settings on the node's panel, and a finding acknowledged with a reason.
 */
const expect = baseExpect.configure({ timeout: 20_000 })
const RUN = randomBytes(3).toString('hex').toUpperCase()
/** Every name of this spec starts so (the test streams' prefix, which the test setup cleans up after a killed run). */
const PREFIX = `LZE2E_DOC_${RUN}`
const ORDERS = `${PREFIX}_ORDERS`
const KEEP = `${PREFIX}_KEEP`
const LOST = `${PREFIX}_LOST`
const MAX_DELIVERIES = '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES'
const TERMINATED = '$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED'
const MS = 1e6
const HOUR_NS = 3_600_000 * MS
/** nats-server's error code for a stream whose subjects overlap another's. */
const SUBJECTS_OVERLAP = 10065

/** What the window shows (the graph fills it), into test-results/screens (support/screens.ts). */
const shot = (page: Page, name: string) => screen(page, name, { dialog: true })

test.describe.configure({ mode: 'serial' })

let nc: NatsConnection
let jsm: JetStreamManager

/** A stream of this spec's; one on advisories waits while another keeps them all (a capture's, of another spec). */
async function addStream(config: Partial<StreamConfig> & { name: string }): Promise<void> {
  await expect
    .poll(
      () =>
        jsm.streams.add({ subjects: [`${config.name.toLowerCase()}.>`], ...config }).then(
          () => true,
          (error: unknown) => {
            if (error instanceof JetStreamApiError && error.code === SUBJECTS_OVERLAP) return false
            throw error
          },
        ),
      { timeout: 90_000, intervals: [500] },
    )
    .toBe(true)
}

test.beforeAll(async () => {
  nc = await natsConnection()
  jsm = await jetstreamManager(nc)
  // ORDERS keeps a message an hour; its consumers: one that retries for ever, one without backoff, one done right.
  await addStream({ name: ORDERS, max_age: HOUR_NS })
  const consumer = (stream: string, durable: string, config: { max_deliver?: number; backoff?: number[] } = {}) =>
    jsm.consumers.add(stream, { durable_name: durable, ack_policy: AckPolicy.Explicit, ...config })
  await consumer(ORDERS, 'forever')
  await consumer(ORDERS, 'eager', { max_deliver: 4 })
  await consumer(ORDERS, 'billing', { max_deliver: 5, backoff: [5_000 * MS, 30_000 * MS, 120_000 * MS] })
  // A team's stream keeps ORDERS' failure advisories; nobody keeps LOST's.
  await addStream({ name: KEEP, subjects: [`${MAX_DELIVERIES}.${ORDERS}.*`, `${TERMINATED}.${ORDERS}.*`], max_age: 14 * 24 * HOUR_NS })
  await addStream({ name: LOST })
  await consumer(LOST, 'audit', { max_deliver: 3, backoff: [5_000 * MS, 30_000 * MS] })
})

test.afterAll(async () => {
  for (const name of [ORDERS, KEEP, LOST]) await jsm?.streams.delete(name).catch(() => false)
  await nc?.close()
})

for (const width of [1440, 1024]) {
  test(`topology at ${width} px: Run now finds JetStream traps beside the vhost's, draws who keeps whose advisories, and one is acknowledged`, async ({ page }) => {
    await page.setViewportSize({ width, height: 900 })
    await page.goto('/topology')
    await expect(page.getByRole('heading', { name: 'Topology' })).toBeVisible()
    await page.getByRole('button', { name: 'Run now' }).click()
    await expect(page.getByRole('button', { name: 'Run now' })).toBeEnabled({ timeout: 60_000 })
    // A run that could not read the server would say why here (and keep its last good part, of which there is none).
    await expect(page.getByTestId('topology-nats-error')).toHaveCount(0)
    await expect(page.getByTestId('topology-nats')).toContainText(/NATS 2\.\d+\.\d+ checked/)

    const findings = page.getByTestId('findings-list')
    const finding = (kind: string, text: string) => findings.locator(`li[data-kind="${kind}"]`).filter({ hasText: text })
    await expect(finding('no-max-deliver', `${ORDERS}/forever`)).toHaveAttribute('data-severity', 'warning')
    await expect(finding('no-backoff', `${ORDERS}/eager`)).toHaveCount(1)
    await expect(finding('stream-limits-drop-failures', `"${ORDERS}"`)).toHaveCount(1)
    await expect(finding('advisories-not-captured', `${LOST}/audit`)).toHaveAttribute('data-severity', 'error')
    // billing has max_deliver, a backoff and kept advisories: nothing about it.
    await expect(findings.locator('li').filter({ hasText: `${ORDERS}/billing` })).toHaveCount(0)

    // The graph, narrowed to this spec's streams: the consumers, marked, and the stream keeping ORDERS' advisories.
    await page.getByLabel('Filter the graph by name').fill(PREFIX)
    const node = (id: string) => page.locator(`[data-node-id="${id}"]`)
    await expect(node(`c:${ORDERS}/forever`)).toHaveAttribute('data-severity', 'warning')
    await expect(node(`c:${LOST}/audit`)).toHaveAttribute('data-severity', 'error')
    await expect(node(`c:${ORDERS}/billing`)).toHaveAttribute('data-severity', '')
    await expect(node(`s:${KEEP}`)).toContainText('advisories')
    await expect(page.getByTestId('topology-graph').locator('.react-flow__edge.edge-advisories')).toHaveCount(3)

    // The finding opens with why and how to fix it; its consumer opens the node's settings.
    const lost = finding('advisories-not-captured', `${LOST}/audit`)
    await lost.getByRole('button', { expanded: false }).click()
    const detail = lost.getByTestId('finding-detail')
    await expect(detail).toContainText('Add a JetStream source for stream')
    await expect(detail).toContainText(`${MAX_DELIVERIES}.${LOST}.audit`)
    await detail.getByRole('button', { name: `consumer ${LOST}/audit` }).click()
    const panel = page.getByTestId('node-panel')
    await expect(panel.getByTestId('node-settings').locator('[data-key="max_deliver"]')).toContainText('3')
    await expect(panel.getByTestId('node-ack-times')).toContainText('Not sampled')
    await expectFits(page, `topology with JetStream at ${width}`)
    await shot(page, `topology-jetstream-${width}`)
    await page.keyboard.press('Escape')
    await expect(panel).toHaveCount(0)
    // The whole of this spec's part, nothing stressed: who keeps whose advisories.
    await lost.getByRole('button', { expanded: true }).click()
    await page.getByTestId('topology-graph').getByRole('button', { name: 'Fit View' }).click()
    await shot(page, `topology-jetstream-graph-${width}`)

    // Acknowledged with a reason, like a RabbitMQ finding (a finding of its own at each width).
    const known = width === 1440 ? finding('no-backoff', `${ORDERS}/eager`) : finding('no-max-deliver', `${ORDERS}/forever`)
    await known.getByRole('button', { expanded: false }).click()
    await known.getByLabel('Reason for acknowledging').fill(`known and accepted (${RUN}, ${width})`)
    await known.getByRole('button', { name: 'Acknowledge' }).click()
    await expect(known.getByTestId('finding-acknowledged')).toContainText(`known and accepted (${RUN}, ${width})`)
    await expect(known).toContainText('acknowledged')
  })
}
