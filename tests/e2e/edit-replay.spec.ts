import { expect as baseExpect } from '@playwright/test'
import amqp from 'amqplib'
import { AMQP_URL, declareWorkQueue, rejectEach } from './support/dead-letter'
import { getJson, pollJson } from './support/api-json'
import { test } from './support/fixtures'
import { capture, expectFits, shots } from './support/screens'

/*
 * Edit and replay (issue 18): a JSON body is edited in the editor (CodeMirror), invalid JSON is flagged, Format
 * pretty-prints it, the side-by-side diff shows the change; "Save and replay" writes revision 1 and opens the replay
 * plan for that message; the work queue then receives the edited body (and only it) with x-lazarus-revision, and the
 * message page lists the revision with its diff.
 */

const expect = baseExpect.configure({ timeout: 15_000 })

const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const WORK = `e2e.edit.work.${RUN.toLowerCase()}`
const EDITED = { orderId: `${RUN}-1`, amount: 42, currency: 'EUR' }

let messageId = ''

test.beforeAll(async ({ request }) => {
  test.setTimeout(120_000)
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await declareWorkQueue(channel, { work: WORK })
    channel.sendToQueue(WORK, Buffer.from(JSON.stringify({ orderId: `${RUN}-1`, amount: 'forty-two', currency: 'EUR' })), {
      contentType: 'application/json',
      messageId: `${RUN}-1`,
      headers: { 'x-error-type': `com.acme.e2e.Edit${RUN}Exception`, 'x-error-message': 'amount is not a number', 'x-retries': 3 },
    })
    await channel.waitForConfirms()
    await rejectEach(channel, WORK, 1)
  } finally {
    await connection.close()
  }
  await expect.poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=10`))?.messages?.length, { timeout: 30_000 }).toBe(1)
  messageId = (await getJson(request, `/api/messages?q=${RUN}&limit=10`)).messages[0].id
})

test.afterAll(async () => {
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createChannel()
  await channel.deleteQueue(WORK).catch(() => {})
  await connection.close()
})

test('edit a JSON body, see the diff, save and replay: the edited revision arrives, the revision shows on the page', async ({ page, request }) => {
  // Editing, a refused save, a replay through the broker and the revision page: more than the default minute on a busy machine.
  test.setTimeout(120_000)
  await page.goto(`/messages/${messageId}`)
  await expect(page.getByTestId('revision-history')).toHaveCount(0)
  await expect(page.getByText('Never edited: a replay sends the original message.')).toBeVisible()
  await page.getByRole('link', { name: 'Edit…' }).click()
  await expect(page).toHaveURL(new RegExp(`/messages/${messageId}/edit$`))

  const editor = page.getByTestId('body-editor')
  await expect(editor).toContainText('forty-two')
  await editor.click()
  await page.keyboard.press('ControlOrMeta+a')
  await page.keyboard.insertText('{"orderId": ')
  await expect(page.getByTestId('json-error')).toContainText('Not valid JSON')
  await expect(page.getByRole('button', { name: 'Save revision' })).toBeDisabled()

  await page.keyboard.press('ControlOrMeta+a')
  await page.keyboard.insertText(JSON.stringify(EDITED))
  await expect(page.getByTestId('json-error')).toHaveCount(0)
  await page.getByRole('button', { name: 'Format' }).click()
  await expect(editor).toContainText('"amount": 42')

  // A typed header changed: x-retries becomes an int32 0, its type chosen explicitly.
  const retriesRow = page.getByRole('row').filter({ has: page.locator('input[value="x-retries"]') })
  await retriesRow.getByRole('combobox').selectOption('I')
  await retriesRow.getByRole('textbox').nth(1).fill('0')

  const diff = page.getByTestId('body-diff')
  await expect(diff).toContainText('"amount":"forty-two"')
  await expect(diff).toContainText('"amount": 42')
  await expect(page.getByTestId('header-diff')).toContainText('x-retries')
  await shots(page, 'edit-message')

  // A header Lazarus stamps itself cannot be set in a revision: the server refuses it (422) and the editor says why.
  await page.getByRole('button', { name: 'Add header' }).click()
  const forged = page.getByRole('table', { name: 'Headers' }).locator('tbody tr').last()
  await forged.getByRole('textbox').first().fill('X-Lazarus-Replay-Id')
  await forged.getByRole('textbox').nth(1).fill('forged')
  await page.getByRole('button', { name: 'Save revision' }).click()
  await expect(page.getByRole('alert').filter({ hasText: 'X-Lazarus-Replay-Id' })).toHaveText(
    `Header "X-Lazarus-Replay-Id" is Lazarus' own and cannot be set in a revision: a replay strips or stamps it itself`,
  )
  await expect(page.getByTestId('saved-revision')).toHaveCount(0)
  await shots(page, 'edit-message-refused-header')
  await forged.getByRole('button', { name: 'Remove header X-Lazarus-Replay-Id' }).click()

  await page.getByRole('button', { name: 'Save and replay…' }).click()
  const dialog = page.getByRole('dialog', { name: 'Replay plan' })
  await expect(dialog.getByTestId('plan-edited')).toContainText('1 message goes out as an edited revision')
  await expect(page.getByTestId('saved-revision')).toHaveText('Saved as revision 1')
  await dialog.getByRole('button', { name: 'Replay 1 message' }).click()
  await expect(page).toHaveURL(/\/replays\/\d+$/)
  const jobId = page.url().split('/').pop()!
  await expect.poll(async () => (await pollJson(request, `/api/replays/${jobId}`))?.status, { timeout: 30_000 }).toBe('completed')

  // Exactly one copy reached the work queue: the edited revision.
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createChannel()
    expect((await channel.checkQueue(WORK)).messageCount).toBe(1)
    const received = await channel.get(WORK, { noAck: true })
    expect(received).not.toBe(false)
    if (received === false) return
    expect(JSON.parse(received.content.toString('utf8'))).toEqual(EDITED)
    expect(received.content.toString('utf8')).toBe(JSON.stringify(EDITED, null, 2))
    expect(Number(received.properties.headers?.['x-lazarus-revision'])).toBe(1)
    expect(received.properties.headers?.['x-retries']).toBe(0)
    expect(received.properties.headers?.['X-Lazarus-Replay-Id']).toBeUndefined()
    expect((await channel.checkQueue(WORK)).messageCount).toBe(0)
  } finally {
    await connection.close()
  }

  await page.goto(`/messages/${messageId}`)
  const history = page.getByTestId('revision-history')
  await expect(history).toContainText('Revision 1')
  await expect(history).toContainText('next replay sends this')
  await history.getByRole('button', { name: 'Revision 1' }).click()
  await expect(history).toContainText('+  "amount": 42,')
  await history.scrollIntoViewIfNeeded()
  for (const width of [1440, 1024]) {
    await page.setViewportSize({ width, height: 900 })
    await expectFits(page, 'message revisions')
    await capture(history, `message-revisions-${width}`)
  }
})
