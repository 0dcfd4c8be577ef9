import { expect as baseExpect } from '@playwright/test'
import { signInAs, test } from './support/fixtures'
import amqp from 'amqplib'
import { AMQP_URL, DLQ, declareWorkQueue, rejectEach } from './support/dead-letter'
import { pollJson } from './support/api-json'
import { shot } from './support/screens'

/*
 * The pause registry from the UI: pause an entity (with the form's validation), see it listed with who, why and
 * since when, resume it, and find both actions in the audit log under the operator's name.
 */

// Two cores shared with the server, PostgreSQL and RabbitMQ: allow a loaded machine some slack.
const expect = baseExpect.configure({ timeout: 15_000 })

const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const OPERATOR = `e2e-pauser-${RUN.toLowerCase()}@lazarus.test`
const QUEUE = `e2e.pause.work.${RUN.toLowerCase()}`
const ENTITY = `${RUN}-order-7`
const REASON = `hold order 7 of ${RUN} while its stock is fixed`

/**
 * Only a queue the source's dead letters failed in may be paused (by anyone but an admin): one message is rejected
 * from QUEUE into the DLQ first, so the broker's x-death names QUEUE as its origin.
 */
async function deadLetterFromQueue() {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await declareWorkQueue(channel, { work: QUEUE })
    channel.sendToQueue(QUEUE, Buffer.from(JSON.stringify({ orderId: ENTITY })), { contentType: 'application/json', headers: { 'x-error-message': `pause fixture ${RUN}` } })
    await channel.waitForConfirms()
    await rejectEach(channel, QUEUE, 1)
    await channel.deleteQueue(QUEUE)
  } finally {
    await connection.close()
  }
}

test('pause an entity, see it listed, resume it, and find both in the audit log', async ({ page, request }) => {
  await deadLetterFromQueue()
  await expect.poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=10`))?.messages?.length, { timeout: 30_000 }).toBe(1)
  // An operator of their own, signed in: the registry and the audit log name them.
  await signInAs(page, request, OPERATOR, { role: 'operator' })
  await page.goto('/pauses')
  const form = page.getByRole('form', { name: 'Pause an entity' })
  // Sources listed: the page is hydrated, so the form's handlers are attached before it is typed into.
  await expect(form.getByRole('combobox')).toContainText(DLQ)
  await form.getByRole('combobox').selectOption({ label: DLQ })
  await form.getByLabel('Consumer queue').fill(QUEUE)
  await form.getByLabel('Entity key').fill(ENTITY)
  // The reason is required: the form says so next to the field.
  await form.getByRole('button', { name: 'Pause' }).click()
  await expect(form.getByRole('alert')).toContainText('a reason is required')
  await form.getByLabel('Reason').fill(REASON)
  await form.getByRole('button', { name: 'Pause' }).click()

  const table = page.getByRole('table', { name: 'Pauses' })
  const row = table.locator(`tr[data-entity="${ENTITY}"]`)
  await expect(row).toHaveAttribute('data-status', 'active')
  await expect(row).toContainText(QUEUE)
  await expect(row).toContainText(DLQ)
  await expect(row).toContainText(REASON)
  await expect(row).toContainText(OPERATOR)
  await expect(row.getByTestId('held')).toHaveText('0')
  await expect(row).toContainText(/just now|\ds ago/)
  // The form was reset for the next pause.
  await expect(form.getByLabel('Entity key')).toHaveValue('')
  await shot(page, 'pauses')

  // Guards read the same registry.
  const registry = await (await request.get('/api/pauses')).json()
  const pause = registry.pauses.find((p: { entityKey: string | null; queue: string }) => p.entityKey === ENTITY && p.queue === QUEUE)
  expect(pause, 'the pause in GET /api/pauses').toBeTruthy()
  expect(pause.createdBy).toBe(OPERATOR)

  // A second pause of the same entity is refused, with the API's reason.
  await form.getByRole('combobox').selectOption({ label: DLQ })
  await form.getByLabel('Consumer queue').fill(QUEUE)
  await form.getByLabel('Entity key').fill(ENTITY)
  await form.getByLabel('Reason').fill('again')
  await form.getByRole('button', { name: 'Pause' }).click()
  await expect(form.getByRole('alert')).toContainText('already paused')

  // Resume: confirmed in a dialog (Enter), then gone from the active list.
  await row.getByRole('button', { name: `Resume ${ENTITY}` }).click()
  const dialog = page.getByRole('dialog', { name: `Resume ${ENTITY}?` })
  await expect(dialog).toContainText('No message is held')
  await shot(page, 'pause-resume-dialog')
  await page.keyboard.press('Enter')
  await expect(dialog).toHaveCount(0)
  await expect(row).toHaveCount(0)

  await page.getByLabel('Show resumed pauses too').click()
  await expect(page.getByLabel('Show resumed pauses too')).toBeChecked()
  await expect(page).toHaveURL(/show=all/)
  await expect(row).toHaveAttribute('data-status', 'resumed')
  await expect(row).toContainText(OPERATOR)

  // Both actions in the audit log, by this operator, linked to the pause.
  await page.goto(`/audit?subjectType=pause&subjectId=${pause.id}`)
  const log = page.getByRole('table', { name: 'Audit log' })
  await expect(log.locator('tr[data-action]')).toHaveCount(2)
  await expect(log.locator('tr[data-action="pause.created"]')).toContainText(OPERATOR)
  await expect(log.locator('tr[data-action="pause.resumed"]')).toContainText(OPERATOR)
  await expect(log.locator('tr[data-action="pause.created"]')).toContainText(ENTITY)
  await shot(page, 'audit-pauses')

  await page.getByLabel('Action').selectOption('pause.resumed')
  await expect(log.locator('tr[data-action]')).toHaveCount(1)
  await log.locator('tr[data-action="pause.resumed"]').getByRole('button', { name: 'Show details' }).click()
  await expect(log).toContainText(QUEUE)
  await shot(page, 'audit-details')
  await page.getByRole('button', { name: 'Clear filters' }).click()
  await expect(page).not.toHaveURL(/action=/)
  await expect(log.locator('tr[data-action="pause.created"]').first()).toBeVisible()
})
