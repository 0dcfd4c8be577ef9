import { expect as baseExpect, type Page } from '@playwright/test'
import amqp from 'amqplib'
import { test } from './support/fixtures'
import { shot } from './support/screens'

/*
 * The sources page's admin actions: delete a source that stored nothing, disable one that did (its messages stay),
 * each after a dialog that says what happens to the messages; and the replay target dropdown shows its whole text.
 */
const expect = baseExpect.configure({ timeout: 15_000 })
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const RUN = Array.from({ length: 6 }, () => 'ghjkmnpqrstvwxyz'[Math.floor(Math.random() * 16)]).join('')

type Source = { id: string; queue: string; drained: number; enabled: boolean }

/**
 * Whether a select is as wide as it wants to be, so every option's text shows whole: its width beside the width of
 * an unconstrained copy. (Measuring the text against the padding missed Chromium's arrow, which takes room of its own.)
 */
const selectFits = (page: Page, label: string) =>
  page.getByLabel(label).evaluate((el: HTMLSelectElement) => {
    const copy = el.cloneNode(true) as HTMLSelectElement
    copy.style.cssText = 'position:absolute;visibility:hidden;width:auto;min-width:0;max-width:none'
    el.parentElement!.appendChild(copy)
    const wanted = copy.getBoundingClientRect().width
    copy.remove()
    return el.getBoundingClientRect().width + 0.5 >= wanted
  })

test.describe.configure({ mode: 'serial' })

for (const width of [1440, 1024]) {
  test(`sources at ${width} px: delete an empty source, disable one with messages, a readable replay target`, async ({ page, request }) => {
    await page.setViewportSize({ width, height: 900 })
    const empty = `e2e.ops.empty.${RUN}.${width}`
    const used = `e2e.ops.used.${RUN}.${width}`
    const connection = await amqp.connect(AMQP_URL)
    const channel = await connection.createConfirmChannel()
    for (const queue of [empty, used]) await channel.assertQueue(queue, { durable: false, autoDelete: false })
    try {
      for (const queue of [empty, used]) expect((await request.post('/api/sources', { data: { queue } })).status()).toBe(201)
      channel.sendToQueue(used, Buffer.from(JSON.stringify({ orderId: `${RUN}-1` })), { headers: { 'x-exception-message': `boom ${RUN}` }, messageId: `${RUN}-1` })
      await channel.waitForConfirms()
      await expect
        .poll(async () => ((await (await request.get('/api/sources')).json()).sources as Source[]).find((s) => s.queue === used)?.drained ?? 0, { timeout: 30_000 })
        .toBeGreaterThan(0)

      await page.goto('/sources')
      const table = page.getByRole('table', { name: 'Sources' })

      // Delete a source that stored nothing.
      const emptyRow = table.locator(`tr[data-source="${empty}"]`)
      await emptyRow.getByRole('button', { name: 'Edit' }).click()
      expect(await selectFits(page, 'Default replay target')).toBe(true)
      await page.getByRole('button', { name: 'Delete…' }).click()
      const deleting = page.getByRole('dialog', { name: `Delete ${empty}?` })
      await expect(deleting).toContainText('It stored no messages')
      await shot(page, `sources-delete-${width}`)
      await deleting.getByRole('button', { name: 'Delete source' }).click()
      await expect(emptyRow).toHaveCount(0)

      // A source with messages cannot be deleted: the dialog offers to disable it, and the messages stay.
      const usedRow = table.locator(`tr[data-source="${used}"]`)
      await usedRow.getByRole('button', { name: 'Edit' }).click()
      await page.getByRole('button', { name: 'Delete…' }).click()
      const refusing = page.getByRole('dialog', { name: `${used} cannot be deleted` })
      await expect(refusing).toContainText('deleting it would lose them')
      await refusing.getByRole('button', { name: 'Keep draining' }).click()
      await page.getByRole('button', { name: 'Disable…' }).click()
      const disabling = page.getByRole('dialog', { name: `Disable ${used}?` })
      await expect(disabling).toContainText('stay: you can still search, replay, resolve and export them')
      await shot(page, `sources-disable-${width}`)
      await disabling.getByRole('button', { name: 'Disable', exact: true }).click()
      await expect(usedRow).toContainText('disabled')
      const after = ((await (await request.get('/api/sources')).json()).sources as Source[]).find((s) => s.queue === used)!
      expect(after).toMatchObject({ enabled: false })
      const messages = await (await request.get(`/api/messages?source=${after.id}`)).json()
      expect(messages.messages.length).toBeGreaterThan(0)
      await shot(page, `sources-${width}`)
    } finally {
      await channel.close()
      for (const queue of [empty, used]) await (await connection.createChannel()).deleteQueue(queue).catch(() => undefined)
      await connection.close()
    }
  })
}
