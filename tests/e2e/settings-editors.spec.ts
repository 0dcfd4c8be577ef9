import { expect as baseExpect, type Page } from '@playwright/test'
import amqp from 'amqplib'
import { AMQP_URL, declareWorkQueue, rejectEach } from './support/dead-letter'
import { test } from './support/fixtures'
import { getJson, pollJson } from './support/api-json'
import { shots as screens, type ShotOptions } from './support/screens'

/*
 * The settings editors save only a change, discard a draft, refuse an invalid value before the API sees it, and say
 * who set the value (components/settings/save-discard.tsx, shared by the allow lists and the large-replay size).
 */

const expect = baseExpect.configure({ timeout: 15_000 })

const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const WORK = `e2e.settings.work.${RUN.toLowerCase()}`

/** `count` messages that fail on a work queue dead-lettering into the drained DLQ: one error group of `count`. */
async function deadLetter(count: number): Promise<void> {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await declareWorkQueue(channel, { work: WORK })
    for (let n = 1; n <= count; n++) {
      channel.sendToQueue(WORK, Buffer.from(JSON.stringify({ orderId: `${RUN}-${n}` })), {
        contentType: 'application/json', messageId: `${RUN}-${n}`, headers: { 'x-error-type': `com.acme.e2e.Stage${RUN}Exception`, 'x-error-message': 'ledger locked' },
      })
    }
    await channel.waitForConfirms()
    await rejectEach(channel, WORK, count)
  } finally {
    await connection.close()
  }
}

/** Screenshots at 1440 and 1024 px into test-results/screens/settings, each checked to fit (support/screens.ts). */
const shots = (page: Page, name: string, options: ShotOptions = {}) => screens(page, `settings/${name}`, options)

test('large replays and the custom target allow list: edit, discard, refuse, save, and say who set it', async ({ page, request }) => {
  const before = (await getJson(request, '/api/settings/replay-confirm')).largeJobMessages as number
  const targetsBefore = (await getJson(request, '/api/settings/replay-targets')).customTargetPatterns as string[]
  try {
    await page.goto('/settings')
    const large = page.locator('section', { has: page.getByRole('heading', { name: 'Large replays' }) }).last()
    const size = page.getByLabel('Large replay size (messages)')
    await expect(size).toHaveValue(String(before))
    const save = large.getByRole('button', { name: 'Save' })
    await expect(save).toBeDisabled()
    await expect(large.getByRole('button', { name: 'Discard' })).toHaveCount(0)

    // An invalid value: said under the field, Save stays off.
    await size.fill('0')
    await expect(large.getByText(/a whole number from 1 to/)).toBeVisible()
    await expect(save).toBeDisabled()
    // Discard brings the stored value back.
    await large.getByRole('button', { name: 'Discard' }).click()
    await expect(size).toHaveValue(String(before))

    const next = before === 4321 ? 4322 : 4321
    await size.fill(String(next))
    await size.press('Enter')
    await expect(large.getByRole('button', { name: 'Discard' })).toHaveCount(0)
    await expect(large).toContainText(/Set by e2e-admin@lazarus\.test/)
    expect((await getJson(request, '/api/settings/replay-confirm')).largeJobMessages).toBe(next)

    // The allow list editor: the same footer, saving on click.
    const targets = page.locator('section', { has: page.getByRole('heading', { name: 'Custom replay targets' }) }).last()
    const list = targets.getByRole('textbox')
    await list.fill([...targetsBefore, 'e2e.settings.*'].join('\n'))
    await targets.getByRole('button', { name: 'Save' }).click()
    await expect(targets.getByRole('button', { name: 'Discard' })).toHaveCount(0)
    expect((await getJson(request, '/api/settings/replay-targets')).customTargetPatterns).toContain('e2e.settings.*')
  } finally {
    expect((await request.put('/api/settings/replay-confirm', { data: { largeJobMessages: before } })).status()).toBe(200)
    expect((await request.put('/api/settings/replay-targets', { data: { customTargetPatterns: targetsBefore } })).status()).toBe(200)
  }
})

test('the staged replay size: refused when invalid, saved beside the large replay size, and the plan dialog offers staging from it', async ({ page, request }) => {
  test.setTimeout(90_000)
  const before = (await getJson(request, '/api/settings/replay-confirm')) as { largeJobMessages: number; stagedFromMessages: number }
  try {
    await deadLetter(3)
    await expect.poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=10`))?.messages?.length, { timeout: 30_000 }).toBe(3)

    // Below the admin's size (1000 by default) the plan offers staging switched off.
    const openPlan = async () => {
      await page.goto(`/?q=Stage${RUN}`)
      await page.getByRole('table', { name: 'Error groups' }).getByRole('link', { name: new RegExp(`Stage${RUN}Exception`) }).click()
      await page.getByRole('button', { name: 'Replay group…' }).click()
      const dialog = page.getByRole('dialog', { name: 'Replay plan' })
      await expect(dialog.getByTestId('plan-replayable')).toHaveText('3')
      return dialog
    }
    let dialog = await openPlan()
    const stageBox = () => dialog.getByTestId('plan-staging').getByRole('checkbox')
    await expect(stageBox()).not.toBeChecked()
    await expect(dialog.getByTestId('plan-staging')).not.toContainText('Offered for replays')

    await page.goto('/settings')
    const large = page.locator('section', { has: page.getByRole('heading', { name: 'Large replays' }) }).last()
    const staged = page.getByLabel('Staged replay size (messages)')
    await expect(staged).toHaveValue(String(before.stagedFromMessages))
    const save = large.getByRole('button', { name: 'Save' })
    await expect(save).toBeDisabled()

    // Invalid: said under the field, Save stays off; the other field keeps its value.
    await staged.fill('3.5')
    await expect(large.getByText(/a whole number from 1 to/)).toBeVisible()
    await expect(save).toBeDisabled()
    await staged.fill('99999999999')
    await expect(large.getByText(/a whole number from 1 to/)).toBeVisible()
    await expect(page.getByLabel('Large replay size (messages)')).toHaveValue(String(before.largeJobMessages))
    await shots(page, 'settings-staged-size-invalid')
    await staged.fill('3')
    await expect(large.getByText(/a whole number from 1 to/)).toHaveCount(0)
    await shots(page, 'settings-staged-size')
    await save.click()
    await expect(large.getByRole('button', { name: 'Discard' })).toHaveCount(0)
    await expect(large).toContainText(/Set by e2e-admin@lazarus\.test/)
    const saved = await getJson(request, '/api/settings/replay-confirm')
    expect(saved).toMatchObject({ largeJobMessages: before.largeJobMessages, stagedFromMessages: 3 })
    const { entries } = (await getJson(request, '/api/audit?subjectType=settings&subjectId=replay-confirm')) as { entries: { summary: string }[] }
    expect(entries.some((e) => e.summary.includes('from 3 they are staged by default'))).toBe(true)

    // It takes effect: the same 3 messages are now offered staged, defaults switched on.
    dialog = await openPlan()
    await expect(stageBox()).toBeChecked()
    await expect(dialog.getByTestId('plan-staging')).toContainText('Offered for replays of 3 messages or more (Settings).')
    await expect(dialog.getByTestId('planned-stage').first()).toBeVisible()
    await shots(page, 'plan-staging-offered')
  } finally {
    expect((await request.put('/api/settings/replay-confirm', { data: { largeJobMessages: before.largeJobMessages, stagedFromMessages: before.stagedFromMessages } })).status()).toBe(200)
    const connection = await amqp.connect(AMQP_URL)
    await (await connection.createChannel()).deleteQueue(WORK).catch(() => {})
    await connection.close()
  }
})
