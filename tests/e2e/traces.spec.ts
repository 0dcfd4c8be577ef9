import { expect as baseExpect } from '@playwright/test'
import amqp from 'amqplib'
import { test } from './support/fixtures'
import { AMQP_URL, declareWorkQueue, rejectEach } from './support/dead-letter'
import { shot, shots } from './support/screens'

/*
 * Traces in the browser (docs/ARCHITECTURE.md#traces): dead letters carrying a W3C traceparent show their trace with an
 * "Open trace" link once an admin sets the template in Settings; the trace id lists its messages, the group lists its
 * recent traces, and a replay told to start a new trace sends a copy with a fresh traceparent naming the old trace.
 */

const expect = baseExpect.configure({ timeout: 15_000 })
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const WORK = `e2e.traces.work.${RUN.toLowerCase()}`
const ERROR_NAME = `Trace${RUN}Exception`
const TRACE = Array.from({ length: 32 }, () => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join('')
const SPANS = ['00f067aa0ba902b7', 'e457b5a2e4d86bd1']
const TEMPLATE = 'https://tempo.example.com/explore?trace={traceId}&span={spanId}'

test.beforeAll(async ({ request }) => {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await declareWorkQueue(channel, { work: WORK })
    for (const [n, span] of SPANS.entries()) {
      channel.sendToQueue(WORK, Buffer.from(JSON.stringify({ n, run: RUN })), {
        contentType: 'application/json',
        messageId: `${RUN}-trace-${n}`,
        persistent: true,
        headers: { 'x-error-type': `com.acme.e2e.${ERROR_NAME}`, 'x-error-message': `trace ${RUN} failed`, traceparent: `00-${TRACE}-${span}-01` },
      })
    }
    await channel.waitForConfirms()
    await rejectEach(channel, WORK, SPANS.length)
  } finally {
    await connection.close()
  }
  await expect.poll(async () => ((await (await request.get(`/api/messages?traceId=${TRACE}&limit=10`)).json()).messages ?? []).length, { timeout: 30_000 }).toBe(2)
})

test.afterAll(async ({ request }) => {
  await request.put('/api/settings/traces', { data: { urlTemplate: null } })
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createChannel()
  await channel.deleteQueue(WORK).catch(() => {})
  await connection.close()
})

test('an admin sets the trace link; messages, their list and their group link to the trace', async ({ page }) => {
  // Settings → Traces: a template that is not http(s) is refused in place; a good one is saved.
  await page.goto('/settings')
  const template = page.getByRole('textbox', { name: 'Trace link template' })
  await template.fill('javascript:alert(1)//{traceId}')
  await expect(page.getByText('the template must give an http or https URL')).toBeVisible()
  await template.fill(TEMPLATE)
  await template.press('Enter')
  await expect(page.getByTestId('trace-template-in-effect')).toContainText('In effect: this one')
  await shots(page, 'traces/settings')

  // The message page: the trace id and "Open trace" in a new tab that gets no reference back.
  const { messages } = await (await page.request.get(`/api/messages?traceId=${TRACE}&limit=10`)).json()
  const newest = messages[0] as { id: string; groupId: string }
  await page.goto(`/messages/${newest.id}`)
  const field = page.getByTestId('trace-field')
  await expect(field).toContainText(TRACE)
  const open = field.getByRole('link', { name: 'Open trace ↗' })
  await expect(open).toHaveAttribute('href', new RegExp(`^https://tempo\\.example\\.com/explore\\?trace=${TRACE}&span=[0-9a-f]{16}$`))
  await expect(open).toHaveAttribute('target', '_blank')
  await expect(open).toHaveAttribute('rel', 'noopener noreferrer')
  await shots(page, 'traces/message')

  // The trace id lists every message of the trace, with the filter as a chip.
  await field.getByRole('link', { name: TRACE }).click()
  await expect(page).toHaveURL(new RegExp(`traceId=${TRACE}`))
  await expect(page.getByRole('row').filter({ hasText: ERROR_NAME })).toHaveCount(2)
  await expect(page.getByRole('button', { name: 'Remove trace filter' })).toBeVisible()
  await shot(page, 'traces/messages-by-trace-1440')

  // The group lists its recent traces: one trace, with its newest message and link.
  await page.goto(`/groups/${newest.groupId}`)
  const traces = page.getByRole('table', { name: 'Recent traces' })
  await expect(traces.getByTestId('group-trace')).toHaveCount(1)
  await expect(traces).toContainText(TRACE)
  await expect(traces.getByRole('link', { name: 'Open trace ↗' })).toHaveAttribute('rel', 'noopener noreferrer')
  await shots(page, 'traces/group')
})

test('a replay told to start a new trace sends a fresh traceparent naming the old trace', async ({ page }) => {
  const { messages } = await (await page.request.get(`/api/messages?traceId=${TRACE}&limit=10`)).json()
  const oldest = messages[messages.length - 1] as { id: string }
  await page.goto(`/messages/${oldest.id}`)
  await page.getByRole('button', { name: 'Replay…' }).click()
  const dialog = page.getByRole('dialog', { name: 'Replay plan' })
  await expect(dialog.getByTestId('plan-replayable')).toHaveText('1')
  const newTrace = dialog.getByRole('checkbox', { name: 'Start a new trace' })
  await expect(newTrace).not.toBeChecked()
  await newTrace.check()
  await expect(dialog.getByText('Each copy gets a fresh traceparent')).toBeVisible()
  await shot(page, 'traces/replay-plan-new-trace-1440', { dialog: true })
  await dialog.getByRole('button', { name: 'Replay 1 message' }).click()
  await expect(page).toHaveURL(/\/replays\/\d+$/)
  await expect(page.getByTestId('job-status')).toHaveText('completed', { timeout: 30_000 })
  await expect(page.getByTestId('job-new-trace')).toHaveText('a new trace per copy')

  // What reached the work queue: a new trace, and the old one named for the consumer's span link.
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createChannel()
    let copy: amqp.GetMessage | false = false
    await expect.poll(async () => (copy = await channel.get(WORK, { noAck: true })), { timeout: 15_000 }).not.toBe(false)
    const headers = (copy as unknown as amqp.GetMessage).properties.headers ?? {}
    const text = (value: unknown) => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value))
    expect(text(headers['x-lazarus-origin-trace'])).toBe(TRACE)
    expect(text(headers.traceparent)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    expect(text(headers.traceparent)).not.toContain(TRACE)
  } finally {
    await connection.close()
  }
})
