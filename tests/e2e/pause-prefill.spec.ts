import { expect as baseExpect, type Page } from '@playwright/test'
import amqp from 'amqplib'
import { AMQP_URL, DLQ, declareWorkQueue, rejectEach } from './support/dead-letter'
import { E2E_ADMIN, signInAs, test } from './support/fixtures'
import { getJson, pollJson } from './support/api-json'
import { shots as screens, type ShotOptions } from './support/screens'

/*
 * "Pause this entity" from a message and from an error group, prefilled (source, consumer queue, entity key, the
 * source's rule), and who listens: the form warns while no guard polls for the queue, and the pauses and sources
 * pages count the guards (docs/ARCHITECTURE.md#pause-hold-release, "Who listens").
 */

const expect = baseExpect.configure({ timeout: 15_000 })

const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const QUEUE = `e2e.prefill.work.${RUN.toLowerCase()}`
const FIRST = `${RUN}-order-1`
const SECOND = `${RUN}-order-2`

/** Two messages of two entities rejected from QUEUE into the DLQ (x-death names QUEUE), one error: one group. */
async function deadLetters() {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await declareWorkQueue(channel, { work: QUEUE })
    for (const entity of [FIRST, SECOND]) {
      channel.sendToQueue(QUEUE, Buffer.from(JSON.stringify({ orderId: entity })), {
        contentType: 'application/json',
        headers: { 'x-entity-key': entity, 'x-error-type': 'StockError', 'x-error-message': `stock sync failed ${RUN}` },
      })
    }
    await channel.waitForConfirms()
    await rejectEach(channel, QUEUE, 2)
    await channel.deleteQueue(QUEUE)
  } finally {
    await connection.close()
  }
}

/** Screenshots at 1440 and 1024 px into test-results/screens/pause, each checked to fit (support/screens.ts). */
const shots = (page: Page, name: string, options: ShotOptions = {}) => screens(page, `pause/${name}`, options)

test('pause an entity from a message and a group, prefilled, warned while no guard listens', async ({ page, request }) => {
  await deadLetters()
  const listed = await expect
    .poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=10`))?.messages?.length, { timeout: 30_000 })
    .toBe(2)
    .then(async () => (await getJson(request, `/api/messages?q=${RUN}&limit=10`)).messages as { id: string; entityKey: string; groupId: string }[])
  const first = listed.find((m) => m.entityKey === FIRST)!
  expect(listed.map((m) => m.groupId)).toEqual([first.groupId, first.groupId])

  // From the message: the form comes prefilled with its source, the queue it failed in and its entity.
  await page.goto(`/messages/${first.id}`)
  await page.getByRole('link', { name: 'Pause this entity' }).click()
  await expect(page).toHaveURL(/\/pauses\?/)
  const form = page.getByRole('form', { name: 'Pause an entity' })
  await expect(form.getByRole('combobox')).toHaveValue(/\d+/)
  await expect(form.getByRole('combobox').locator('option:checked')).toHaveText(DLQ)
  await expect(form.getByLabel('Consumer queue')).toHaveValue(QUEUE)
  await expect(form.getByLabel('Entity key')).toHaveValue(FIRST)
  await expect(form.getByLabel('Reason')).toBeFocused()
  const facts = form.getByTestId('pause-queue-facts')
  // The source's own rule, whichever it is now (other specs edit e2e.dlq's settings).
  await expect(facts).toContainText(/entity key by (header|body) \S+ \(the source's rule\)/)
  // Nobody polls for QUEUE: the form says so before the pause is made.
  await expect(form.getByTestId('guard-warning')).toContainText(`No guard listens on ${QUEUE}`)
  await expect(facts.getByTestId('guard-count')).toHaveText('guards listening: 0, up to date: 0')
  await shots(page, 'pause-prefilled-no-guard')
  await form.getByLabel('Reason').fill(`order 1 of ${RUN} while stock is fixed`)
  await page.keyboard.press('Enter')

  const table = page.getByRole('table', { name: 'Pauses' })
  const row = table.locator(`tr[data-entity="${FIRST}"]`)
  await expect(row).toHaveAttribute('data-status', 'active')
  await expect(row).toContainText(QUEUE)
  await expect(row.getByTestId('guard-count')).toHaveText('listening: 0, up to date: 0')

  // A person naming an instance leaves no heartbeat; a guard polling for QUEUE with its guard token does (its poll is
  // its heartbeat), holding the current registry version.
  const { version } = await getJson(request, '/api/pauses')
  const pollQuery = `/api/pauses?queue=${encodeURIComponent(QUEUE)}&vhost=%2F&instance=e2e-guard-${RUN}&guardVersion=2.1.0&registryVersion=${version}`
  expect((await request.get(pollQuery)).status()).toBe(200)
  await page.reload()
  await expect(row.getByTestId('guard-count')).toHaveText('listening: 0, up to date: 0')
  const admin = ((await getJson(request, '/api/users')).users as { id: string; email: string }[]).find((u) => u.email === E2E_ADMIN.email)!
  const created = await request.post('/api/tokens', { data: { name: `e2e-guard-${RUN}`, scope: 'guard', guardQueue: QUEUE, userId: admin.id, expiresInDays: 1 } })
  expect(created.status()).toBe(201)
  const { token } = (await created.json()) as { token: string }
  const poll = await request.get(pollQuery, { headers: { authorization: `Bearer ${token}` } })
  expect(poll.status()).toBe(200)
  await expect(row.getByTestId('guard-count')).toHaveText('listening: 1, up to date: 1')
  await shots(page, 'pauses-guards')

  // From the group: the entities it touches, one already paused.
  await page.goto(`/groups/${first.groupId}`)
  await page.getByRole('link', { name: 'Pause its entities' }).click()
  const groupForm = page.getByRole('form', { name: 'Pause the entities of a group' })
  const entities = groupForm.getByTestId('group-entities')
  await expect(entities).toContainText(FIRST)
  await expect(entities).toContainText(SECOND)
  await expect(entities.locator('li', { hasText: FIRST })).toContainText('paused')
  await expect(entities.locator('li', { hasText: SECOND })).not.toContainText('paused')
  // Each entity is paused on the queue its messages failed in: the form counts the guards there.
  await expect(entities.locator('li', { hasText: SECOND })).toContainText(QUEUE)
  await expect(groupForm.getByTestId('guard-count')).toHaveText('guards listening: 1, up to date: 1')
  await shots(page, 'pause-group')
  await groupForm.getByLabel('Reason').fill(`the group of ${RUN}`)
  await groupForm.getByRole('button', { name: 'Pause 2 entities' }).click()
  await expect(groupForm.getByTestId('group-pause-outcome')).toContainText('1 entity paused, 1 already paused')
  await expect(table.locator(`tr[data-entity="${SECOND}"]`)).toHaveAttribute('data-status', 'active')

  // The guard has not polled since the second pause: it listens but is behind, beside both pauses.
  await expect(table.locator(`tr[data-entity="${SECOND}"]`).getByTestId('guard-count')).toHaveText('listening: 1, up to date: 0')
  await expect(row.getByTestId('guard-count')).toHaveText('listening: 1, up to date: 0')
  // The sources page counts the guards on each source's usual consumer queue (the one most of e2e.dlq's recent
  // messages failed in, which other specs decide in a full run; exact counts: pause-guard-listeners.test.ts).
  await page.goto('/sources')
  await expect(page.locator(`tr[data-source="${DLQ}"]`).getByTestId('guard-count')).toHaveText(/^listening: \d+, up to date: \d+$/)
  await shots(page, 'sources-guards')

  // A viewer may not pause: no link on the message, nor on the group.
  await signInAs(page, request, `e2e-prefill-viewer-${RUN.toLowerCase()}@lazarus.test`, { role: 'viewer' })
  await page.goto(`/messages/${first.id}`)
  await expect(page.getByRole('button', { name: 'Copy as ticket' })).toBeVisible()
  await expect(page.getByRole('link', { name: 'Pause this entity' })).toHaveCount(0)
  await page.goto(`/groups/${first.groupId}`)
  await expect(page.getByRole('button', { name: 'Copy as ticket' })).toBeVisible()
  await expect(page.getByRole('link', { name: 'Pause its entities' })).toHaveCount(0)
})
