import { expect, test as setup } from '@playwright/test'
import { ADMIN_STATE, E2E_ADMIN } from './support/fixtures'

/**
 * Signs the admin in through the sign-in page, once, and keeps the browser state for every spec (Playwright's
 * setup-project pattern). Also proves a signed-out visitor is sent to sign in and brought back.
 */
setup('sign in as the admin', async ({ page }) => {
  await page.goto('/messages?status=dead')
  await expect(page).toHaveURL(/\/sign-in\?next=%2Fmessages%3Fstatus%3Ddead/)
  await page.getByLabel('E-mail address').fill(E2E_ADMIN.email)
  await page.getByLabel('Password').fill(E2E_ADMIN.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page).toHaveURL(/\/messages\?status=dead$/)
  await expect(page.getByRole('button', { name: `Signed in as ${E2E_ADMIN.email}` })).toBeVisible()
  await page.context().storageState({ path: ADMIN_STATE })
})
