import { expect, test as base, type APIRequestContext, type Page } from '@playwright/test'
import { currentSlot } from './slots'

/** What tests/e2e/serve.sh starts the server with (the same defaults). */
export const E2E_ADMIN = {
  email: process.env.E2E_ADMIN_EMAIL ?? 'e2e-admin@lazarus.test',
  password: process.env.E2E_ADMIN_PASSWORD ?? 'e2e-admin-password-not-secret',
  token: process.env.E2E_ADMIN_TOKEN ?? 'lazarus-e2e-admin-token-0123456789abcdef',
}

/** The admin's signed-in browser state for this worker's server, left by the setup project (tests/e2e/auth.setup.ts). */
export const adminState = (): string => currentSlot().adminState

/**
 * Every spec talks to its worker's own server (support/slots.ts). Its `page` is signed in as the admin (storage state
 * from the setup project); its `request` is an API client with the provisioning admin token, as a script would be.
 */
export const test = base.extend({
  baseURL: async ({}, use) => use(currentSlot().url),
  storageState: async ({}, use) => use(adminState()),
  request: async ({ playwright, baseURL }, use) => {
    const context = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { authorization: `Bearer ${E2E_ADMIN.token}` } })
    await use(context)
    await context.dispose()
  },
})

export type TestUserGrant = { role: 'viewer' | 'operator' | 'admin'; sourcePattern?: string | null }

/**
 * Creates a user with `grant` through the admin API and signs `page`'s browser in as them (the invitation link's
 * set-password call answers with their session cookie). Returns the e-mail address, which the audit log shows.
 */
export async function signInAs(page: Page, request: APIRequestContext, email: string, grant: TestUserGrant): Promise<string> {
  const created = await request.post('/api/users', { data: { email, roles: [{ role: grant.role, sourcePattern: grant.sourcePattern ?? null }] } })
  expect(created.status(), await created.text()).toBe(201)
  const { setPasswordUrl } = (await created.json()) as { setPasswordUrl: string }
  const token = new URL(setPasswordUrl).hash.replace(/^#token=/, '')
  const origin = currentSlot().url
  const set = await page.request.post('/api/auth/set-password', { data: { token, password: `pw-${email}-long-enough` }, headers: { origin } })
  expect(set.status(), await set.text()).toBe(200)
  return email
}

export { expect }
