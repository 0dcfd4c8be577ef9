import { expect as baseExpect } from '@playwright/test'
import { test } from './support/fixtures'
import { pollJson } from './support/api-json'

/*
 * The settings editors save only a change, discard a draft, refuse an invalid value before the API sees it, and say
 * who set the value (components/settings/save-discard.tsx, shared by the allow lists and the large-replay size).
 */

const expect = baseExpect.configure({ timeout: 15_000 })

test('large replays and the custom target allow list: edit, discard, refuse, save, and say who set it', async ({ page, request }) => {
  const before = (await pollJson(request, '/api/settings/replay-confirm'))!.largeJobMessages as number
  const targetsBefore = (await pollJson(request, '/api/settings/replay-targets'))!.customTargetPatterns as string[]
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
    expect((await pollJson(request, '/api/settings/replay-confirm'))!.largeJobMessages).toBe(next)

    // The allow list editor: the same footer, saving on click.
    const targets = page.locator('section', { has: page.getByRole('heading', { name: 'Custom replay targets' }) }).last()
    const list = targets.getByRole('textbox')
    await list.fill([...targetsBefore, 'e2e.settings.*'].join('\n'))
    await targets.getByRole('button', { name: 'Save' }).click()
    await expect(targets.getByRole('button', { name: 'Discard' })).toHaveCount(0)
    expect((await pollJson(request, '/api/settings/replay-targets'))!.customTargetPatterns).toContain('e2e.settings.*')
  } finally {
    expect((await request.put('/api/settings/replay-confirm', { data: { largeJobMessages: before } })).status()).toBe(200)
    expect((await request.put('/api/settings/replay-targets', { data: { customTargetPatterns: targetsBefore } })).status()).toBe(200)
  }
})
