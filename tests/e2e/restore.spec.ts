import { expect as baseExpect } from '@playwright/test'
import amqp from 'amqplib'
import { getJson, pollJson } from './support/api-json'
import { test } from './support/fixtures'
import { capture } from './support/screens'
import { sourceQueue } from './support/slots'

/*
 * Restore (issue 18): a resolved message, and a group's resolved messages, go back to dead with a reason from the
 * message and group pages; the message can be replayed again.
 */

const expect = baseExpect.configure({ timeout: 15_000 })

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = sourceQueue()
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const TYPE = `com.acme.e2e.Restore${RUN}Exception`

type Message = { id: string; groupId: string; status: string }

let messages: Message[] = []

test.beforeAll(async ({ request }) => {
  test.setTimeout(120_000)
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createConfirmChannel()
  await channel.assertQueue(DLQ, { durable: true })
  for (const n of [1, 2]) {
    channel.sendToQueue(DLQ, Buffer.from(JSON.stringify({ n })), { contentType: 'application/json', messageId: `${RUN}-${n}`, headers: { 'x-error-type': TYPE, 'x-error-message': 'cancelled by mistake' }, persistent: true })
  }
  await channel.waitForConfirms()
  await connection.close()
  await expect.poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=10`))?.messages?.length, { timeout: 30_000 }).toBe(2)
  messages = (await getJson(request, `/api/messages?q=${RUN}&limit=10`)).messages
  const resolved = await request.post('/api/messages/resolve', { data: { selection: { groupId: messages[0].groupId }, reason: 'e2e: cancelled orders' } })
  expect(resolved.status(), await resolved.text()).toBe(200)
})

test('a resolved message is restored from its page, then the rest of its group from the group page', async ({ page, request }) => {
  const [first, second] = messages
  await page.goto(`/messages/${first.id}`)
  await expect(page.getByRole('button', { name: 'Replay…' })).toBeDisabled()
  await page.getByRole('button', { name: 'Restore…' }).click()
  const dialog = page.getByRole('dialog', { name: 'Restore to dead' })
  await dialog.getByPlaceholder('Reason (required)').fill('e2e: the cancellation was wrong')
  for (const width of [1440, 1024]) {
    await page.setViewportSize({ width, height: 900 })
    await capture(page, `restore-dialog-${width}`)
  }
  await dialog.getByRole('button', { name: 'Restore', exact: true }).click()
  await expect(page.getByTestId('resolve-result')).toHaveText('1 message dead again.')
  await page.getByRole('button', { name: 'Done' }).click()
  await expect(page.getByRole('button', { name: 'Replay…' })).toBeEnabled()
  await expect(page.getByRole('button', { name: 'Restore…' })).toHaveCount(0)

  await page.goto(`/groups/${first.groupId}`)
  await page.getByRole('button', { name: 'Restore resolved…' }).click()
  const groupDialog = page.getByRole('dialog', { name: 'Restore to dead' })
  await groupDialog.getByPlaceholder('Reason (required)').fill('e2e: all of them')
  await groupDialog.getByRole('button', { name: 'Restore', exact: true }).click()
  await expect(page.getByTestId('resolve-result')).toContainText('1 message dead again.')
  await expect(page.getByTestId('resolve-result')).toContainText('1 left as they were')
  const after = await (await request.get(`/api/messages/${second.id}`)).json()
  expect(after.status).toBe('dead')
})
