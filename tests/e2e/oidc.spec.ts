import { rmSync } from 'node:fs'
import { expect, type Browser } from '@playwright/test'
import pg from 'pg'
import { chromiumExecutable } from './support/chromium'
import { test } from './support/fixtures'
import { freePort, startLazarus, type LazarusServer } from './support/lazarus-server'
import { makeTestCa, startOidcProvider, type TestCa, type TestOidcProvider } from './support/oidc-provider'

/*
 * Single sign-on end to end in Chromium: a real OpenID Connect provider on loopback HTTPS with a CA made for this
 * run, and a Lazarus configured for it (authorization code + PKCE through openid-client). Sign in, the role from the
 * groups claim, a user whose groups give no role, sign out, and a session that ended.
 */

test.describe.configure({ mode: 'serial' })

let ca: TestCa
let provider: TestOidcProvider
let lazarus: LazarusServer
let browser: Browser

test.beforeAll(async ({ playwright }) => {
  test.setTimeout(150_000)
  ca = makeTestCa()
  const port = await freePort()
  provider = await startOidcProvider({
    ca,
    redirectUri: `http://127.0.0.1:${port}/api/auth/oidc/callback`,
    accounts: {
      ann: { email: 'ann@corp.test', name: 'Ann Oncall', groups: ['staff', 'lazarus-oncall'] },
      zed: { email: 'zed@corp.test', name: 'Zed Outsider', groups: ['staff'] },
    },
  })
  lazarus = await startLazarus(
    {
      LAZARUS_OIDC_ISSUER: provider.issuer,
      LAZARUS_OIDC_CLIENT_ID: provider.clientId,
      LAZARUS_OIDC_CLIENT_SECRET: provider.clientSecret,
      LAZARUS_OIDC_SCOPES: 'openid email profile groups',
      LAZARUS_OIDC_NAME: 'Corp SSO',
      LAZARUS_GROUP_ROLES: 'lazarus-oncall=operator; lazarus-admins=admin',
      LAZARUS_LOCAL_ACCOUNTS: '0',
      // The provider's certificate is checked against this run's CA, as a private CA is in production.
      NODE_EXTRA_CA_CERTS: ca.caFile,
    },
    port,
  )
  // Chromium accepts exactly the provider's key, nothing else.
  browser = await playwright.chromium.launch({
    executablePath: chromiumExecutable(),
    args: ['--disable-gpu', '--disable-quic', `--ignore-certificate-errors-spki-list=${ca.spkiSha256}`],
  })
})

test.afterAll(async () => {
  await browser?.close()
  await lazarus?.stop()
  await provider?.close()
  // The CA's key and certificates, once nothing reads them.
  if (ca) rmSync(ca.dir, { recursive: true, force: true })
})

async function signInAtProvider(page: import('@playwright/test').Page, login: string) {
  await page.goto(`${lazarus.url}/replays`)
  await expect(page).toHaveURL(/\/sign-in\?next=%2Freplays/)
  await expect(page.getByLabel('Password')).toHaveCount(0) // password sign-in is off here
  await page.getByRole('link', { name: 'Sign in with Corp SSO' }).click()
  await expect(page).toHaveURL(new RegExp(`^${provider.issuer}/interaction/`))
  await page.locator('input[name=login]').fill(login)
  await page.locator('input[name=password]').fill('any password')
  await page.getByRole('button', { name: 'Sign-in' }).click()
  await page.getByRole('button', { name: 'Continue' }).click()
}

test('sign in through the provider; the groups claim gives the role; sign out', async () => {
  const context = await browser.newContext()
  const page = await context.newPage()
  await signInAtProvider(page, 'ann')
  await expect(page).toHaveURL(`${lazarus.url}/replays`)
  await expect(page.getByRole('button', { name: 'Signed in as ann@corp.test' })).toBeVisible()
  await expect(page.getByTestId('user-role')).toHaveText('operator')
  const who = await (await page.request.get(`${lazarus.url}/api/auth/session`)).json()
  expect(who).toMatchObject({ signedIn: true, user: { email: 'ann@corp.test', via: 'session' }, roles: [{ role: 'operator', sourcePattern: null }] })
  // An operator, not an admin.
  expect((await page.request.get(`${lazarus.url}/api/users`)).status()).toBe(403)

  await page.getByRole('button', { name: 'Signed in as ann@corp.test' }).click()
  await page.getByRole('menuitem', { name: 'Sign out' }).click()
  await expect(page).toHaveURL(/\/sign-in$/)
  expect((await page.request.get(`${lazarus.url}/api/sources`)).status()).toBe(401)
  await context.close()
})

test('a user whose groups give no role is told so and not signed in', async () => {
  const context = await browser.newContext()
  const page = await context.newPage()
  await signInAtProvider(page, 'zed')
  await expect(page).toHaveURL(/\/sign-in\?error=/)
  await expect(page.getByRole('alert').filter({ hasText: 'none of your groups gives a role' })).toBeVisible()
  expect(await (await page.request.get(`${lazarus.url}/api/auth/session`)).json()).toMatchObject({ signedIn: false })
  await context.close()
})

test('a session that ended sends the browser back to sign in', async () => {
  const context = await browser.newContext()
  const page = await context.newPage()
  await signInAtProvider(page, 'ann')
  await expect(page.getByRole('button', { name: 'Signed in as ann@corp.test' })).toBeVisible()
  const db = new pg.Client({ connectionString: lazarus.databaseUrl })
  await db.connect()
  await db.query(`UPDATE sessions SET expires_at = now() WHERE revoked_at IS NULL`)
  await db.end()
  // The open page's next poll gets 401 and goes to sign in by itself ("your session ended"); a navigation does too.
  await page.goto(`${lazarus.url}/messages`).catch(() => {})
  await expect(page).toHaveURL(/\/sign-in\?next=%2F(messages|replays)/)
  expect((await page.request.get(`${lazarus.url}/api/sources`)).status()).toBe(401)
  await context.close()
})
