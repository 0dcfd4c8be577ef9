import { expect as baseExpect, type Page } from '@playwright/test'
import amqp from 'amqplib'
import { test } from './support/fixtures'
import { shots as screens, type ShotOptions } from './support/screens'
import { AMQP_URL, declareWorkQueue, DLQ, rejectEach } from './support/dead-letter'

/*
 * Old must not overwrite new (issue 18; docs/ARCHITECTURE.md#entity-versions), in the browser: the source's version
 * rule, versions 3, 1 and 2 of one order dead-lettered by RabbitMQ, the plan dialog showing the versions and
 * "only the newest per entity", the job publishing version 3 alone, and a guard's report of a superseded copy shown on
 * the job page and in the message's replay history. The spec sets the shared source's rules and puts them back.
 */

const expect = baseExpect.configure({ timeout: 15_000 })
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const EXCHANGE = `e2e.versions.${RUN.toLowerCase()}`
const WORK = `e2e.versions.work.${RUN.toLowerCase()}`
const KEY = `order.versions.${RUN.toLowerCase()}`
const ERROR = `com.acme.e2e.Versions${RUN}Exception`
const ORDER = `ord-${RUN}`

async function deadLetter(versions: number[]) {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await declareWorkQueue(channel, { work: WORK, exchange: EXCHANGE, key: KEY })
    for (const version of versions) {
      const headers = { 'x-error-type': ERROR, 'x-error-message': `order ${ORDER} version ${version} failed`, 'x-service': 'orders' }
      channel.publish(EXCHANGE, KEY, Buffer.from(JSON.stringify({ orderId: ORDER, version, run: RUN })), { contentType: 'application/json', headers, persistent: true })
    }
    await channel.waitForConfirms()
    expect(await rejectEach(channel, WORK, versions.length)).toBe(0)
    await channel.close()
  } finally {
    await connection.close()
  }
}

async function workDepth(): Promise<number> {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createChannel()
    return (await channel.checkQueue(WORK)).messageCount
  } finally {
    await connection.close()
  }
}

/** Screenshots at 1440 and 1024 px into test-results/screens/versions, each checked to fit (support/screens.ts). */
const shots = (page: Page, name: string, options: ShotOptions = {}) => screens(page, `versions/${name}`, options)

test('versions in the plan, only the newest per entity, and a superseded item on the job page', async ({ page, request }) => {
  test.setTimeout(120_000)
  const sources = (await (await request.get('/api/sources')).json()) as { sources: { id: string; queue: string; entityKey: unknown; entityVersion: unknown }[] }
  const source = sources.sources.find((s) => s.queue === DLQ)!
  const before = { entityKey: source.entityKey, entityVersion: source.entityVersion }

  try {
    // The admin sets both rules in the source editor.
    await page.goto('/sources')
    await page.locator(`tr[data-source="${DLQ}"]`).getByRole('button', { name: 'Edit' }).click()
    const form = page.getByRole('form', { name: `Settings of ${DLQ}` })
    await form.getByLabel('Entity key source').selectOption('jsonPointer')
    await form.getByLabel('JSON pointer', { exact: true }).fill('/orderId')
    await form.getByLabel('Entity version source').selectOption('jsonPointer')
    await form.getByLabel('Version JSON pointer').fill('/version')
    await expect(form.getByLabel('Entity version type')).toHaveValue('number')
    await shots(page, 'source-editor')
    await form.getByRole('button', { name: 'Save' }).click()
    await expect(form).toHaveCount(0)
    await expect(page.getByText('version: body /version (number)')).toBeVisible()
    // Saved through this server's API: its drainer applied the rule before the save was answered
    // (the composition root's `sourcesChanged` signal), so the next dead letters are read with it.

    await deadLetter([3, 1, 2])
    await expect.poll(async () => (await (await request.get(`/api/messages?q=${RUN}&limit=10`)).json()).messages?.length, { timeout: 30_000 }).toBe(3)

    // The plan dialog: one entity with several versions; "only the newest" leaves the two older ones out.
    await page.goto(`/?q=Versions${RUN}`)
    await page.getByRole('table', { name: 'Error groups' }).getByRole('link', { name: new RegExp(`Versions${RUN}Exception`) }).click()
    await page.getByRole('button', { name: 'Replay group…' }).click()
    const dialog = page.getByRole('dialog', { name: 'Replay plan' })
    await expect(dialog.getByTestId('plan-replayable')).toHaveText('3')
    const versions = dialog.getByRole('region', { name: 'Entity versions' })
    await expect(versions.getByTestId('versions-several')).toHaveText('1 entity with several versions')
    await expect(versions.getByRole('list', { name: 'Entities with several or newer versions' })).toContainText(`${ORDER}1 · 2 · 3`)
    await dialog.getByRole('radio', { name: 'Failed queue only' }).check()
    const onlyNewest = versions.getByRole('checkbox', { name: 'Only the newest per entity' })
    await onlyNewest.check()
    await expect(dialog.getByTestId('plan-replayable')).toHaveText('1')
    await expect(dialog.getByTestId('plan-excluded')).toHaveText('2')
    await expect(dialog.getByTestId('plan-exclusions')).toContainText('superseded: a newer version of its entity is in the selection')
    await shots(page, 'plan-dialog', { dialog: true })

    await dialog.getByRole('button', { name: 'Replay 1 message' }).click()
    await expect(page).toHaveURL(/\/replays\/\d+$/)
    const jobId = page.url().split('/').pop()!
    await expect(page.getByTestId('job-status')).toHaveText('completed', { timeout: 30_000 })
    await expect(page.getByTestId('count-total')).toHaveText('1')
    expect(await workDepth()).toBe(1)

    // A guard on the work queue processed version 5 meanwhile and drops the replayed copy: it reports it.
    const origin = new URL(page.url()).origin
    const created = await page.request.post('/api/tokens', { data: { name: `guard ${RUN}`, scope: 'guard', guardQueue: WORK }, headers: { origin } })
    expect(created.status(), await created.text()).toBe(201)
    const { token } = (await created.json()) as { token: string }
    const items = (await (await request.get(`/api/replays/${jobId}/items`)).json()) as { items: { replayId: string; messageId: string }[] }
    const report = { queue: WORK, vhost: '/', instance: `e2e-${RUN}`, replayId: items.items[0].replayId, entityKey: ORDER, version: 3, supersededBy: 5 }
    const reported = await page.request.post('/api/guard/superseded', { data: report, headers: { authorization: `Bearer ${token}`, origin } })
    expect(reported.status(), await reported.text()).toBe(200)

    await page.reload()
    const row = page.getByRole('table', { name: 'Replay items' }).locator('tbody tr[data-superseded="true"]')
    await expect(row).toHaveCount(1)
    await expect(row).toContainText('superseded by version 5')
    await shots(page, 'job-superseded')

    // The message's replay history says so too; the two older versions are resolved as superseded.
    await row.getByRole('link').first().click()
    await expect(page.getByRole('table', { name: 'Replay history' }).locator(`tr[data-job-id="${jobId}"]`)).toContainText('superseded by version 5')
    // (The page's own session: the token client's connection has been idle since the job started.)
    const resolved = (await (await page.request.get(`/api/messages?q=${RUN}&status=resolved&limit=10`)).json()) as { messages: unknown[] }
    expect(resolved.messages).toHaveLength(2)
    await shots(page, 'message-superseded')
  } finally {
    await request.patch(`/api/sources/${source.id}`, { data: before })
    const connection = await amqp.connect(AMQP_URL)
    const channel = await connection.createChannel()
    await channel.deleteQueue(WORK).catch(() => {})
    await channel.deleteExchange(EXCHANGE).catch(() => {})
    await connection.close()
  }
})
