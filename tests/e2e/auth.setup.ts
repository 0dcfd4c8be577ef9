import { expect, test as setup } from '@playwright/test'
import { E2E_ADMIN } from './support/fixtures'
import { E2E_WORKERS, e2eSlot } from './support/slots'

/**
 * Signs the admin in through the sign-in page of every worker's server, once, and keeps each browser state for the
 * specs of that worker (Playwright's setup-project pattern). Also proves a signed-out visitor is sent to sign in and
 * brought back.
 */
for (let index = 0; index < E2E_WORKERS; index++) {
  const slot = e2eSlot(index)
  setup(`sign in as the admin on ${slot.url}`, async ({ page }) => {
    await page.goto(`${slot.url}/messages?status=dead`)
    await expect(page).toHaveURL(/\/sign-in\?next=%2Fmessages%3Fstatus%3Ddead/)
    await page.getByLabel('E-mail address').fill(E2E_ADMIN.email)
    await page.getByLabel('Password').fill(E2E_ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expect(page).toHaveURL(/\/messages\?status=dead$/)
    await expect(page.getByRole('button', { name: `Signed in as ${E2E_ADMIN.email}` })).toBeVisible()
    await page.context().storageState({ path: slot.adminState })
  })
}
