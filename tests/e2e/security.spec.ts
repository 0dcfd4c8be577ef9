import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect, type Page } from '@playwright/test'
import { getJson } from './support/api-json'
import { signInAs, test } from './support/fixtures'

/*
 * The surface against a hostile web, in Chromium: a page of another origin tries every write it can make without a
 * preflight (fetch no-cors with text/plain, a plain HTML form) against a signed-in admin, and tries to frame
 * Lazarus; every page carries the security headers and its scripts run under the nonce CSP; a viewer gets no
 * Replay button and the API refuses them anyway.
 */

const RUN = Array.from({ length: 6 }, () => 'bcdfghjkmnpqrstvwxz'[Math.floor(Math.random() * 19)]).join('')

let attacker: Server
let attackerOrigin: string

test.beforeAll(async ({ baseURL }) => {
  // The attacker's site, on another port of the same machine (same-site for cookies, so SameSite=Lax alone would not stop it).
  attacker = createServer((req, res) => {
    res.setHeader('content-type', 'text/html')
    const target = baseURL!
    if (req.url === '/csrf') {
      res.end(`<!doctype html><title>evil</title>
        <form id="f" method="POST" action="${target}/api/messages/resolve" enctype="text/plain">
          <input name='{"selection":{"filter":{}},"reason":"pwned","x":"' value='"}'>
        </form>
        <script>
          const send = (path, body) => fetch('${target}' + path, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: JSON.stringify(body) })
          Promise.allSettled([
            send('/api/sources', { queue: 'csrf-${RUN}.dlq', confirmNotWorkQueue: true }),
            send('/api/alerts/webhooks', { url: 'https://csrf-${RUN}.example.com/hook' }),
            send('/api/pauses', { sourceId: '1', entityKey: 'csrf-${RUN}', reason: 'pwned' }),
            send('/api/replays', { selection: { filter: { q: 'csrf' } } }),
            send('/api/tokens', { name: 'csrf-${RUN}', role: 'admin' }),
          ]).then(() => { document.title = 'sent'; document.getElementById('f').submit() })
        </script>`)
      return
    }
    // The frame's load event fires once the browser is done with it, shown or blocked: the title tells the test.
    res.end(`<!doctype html><title>frame</title><iframe id="victim" src="${target}/" width="800" height="600" onload="document.title = 'frame loaded'"></iframe>`)
  })
  attacker.listen(0, '127.0.0.1')
  await once(attacker, 'listening')
  attackerOrigin = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`
})

test.afterAll(() => {
  attacker?.close()
})

test('a page of another origin cannot make a signed-in admin change anything (no-cors fetch, HTML form)', async ({ page, request }) => {
  const before = await getJson(request, '/api/audit?limit=200')
  await page.goto(`${attackerOrigin}/csrf`)
  // The form posts to Lazarus and the browser navigates there: wait for that answer.
  await page.waitForURL(/\/api\/messages\/resolve$/, { timeout: 15_000 })
  await expect(page.locator('body')).toContainText('forbidden')
  const sources = await getJson(request, '/api/sources')
  expect(sources.sources.map((s: { queue: string }) => s.queue)).not.toContain(`csrf-${RUN}.dlq`)
  const alerts = await getJson(request, '/api/alerts')
  expect(alerts.webhooks.map((w: { url: string }) => w.url).join(' ')).not.toContain(`csrf-${RUN}`)
  const tokens = await getJson(request, '/api/tokens')
  expect(tokens.tokens.map((t: { name: string }) => t.name)).not.toContain(`csrf-${RUN}`)
  const after = await getJson(request, '/api/audit?limit=200')
  const newEntries = after.entries.filter((e: { id: string }) => !before.entries.some((b: { id: string }) => b.id === e.id))
  expect(newEntries.filter((e: { action: string }) => !e.action.startsWith('auth.'))).toEqual([])
})

test('another site cannot frame Lazarus', async ({ page }) => {
  await page.goto(`${attackerOrigin}/frame`)
  const frame = page.frameLocator('#victim')
  // Blocked by frame-ancestors 'none' (and X-Frame-Options): once the frame has loaded, it does not show Lazarus' navigation.
  await expect(page).toHaveTitle('frame loaded')
  await expect(frame.getByRole('navigation', { name: 'Main' })).toHaveCount(0)
  const response = await page.request.get('/')
  expect(response.headers()['content-security-policy']).toContain("frame-ancestors 'none'")
})

async function expectSecureHeaders(page: Page, path: string, status: number) {
  const response = await page.goto(path)
  expect(response!.status()).toBe(status)
  const headers = response!.headers()
  const csp = headers['content-security-policy']
  expect(csp, path).toMatch(/script-src 'self' 'nonce-[^']+' 'strict-dynamic'/)
  expect(csp).not.toMatch(/script-src[^;]*'unsafe-inline'/)
  expect(csp).toContain("frame-ancestors 'none'")
  expect(headers['x-content-type-options']).toBe('nosniff')
  expect(headers['referrer-policy']).toBe('same-origin')
  // Every script the server rendered carries this response's nonce, so the page runs under the policy (scripts
  // those load afterwards are trusted through 'strict-dynamic').
  const nonce = /'nonce-([^']+)'/.exec(csp)![1]
  const tags = (await response!.text()).match(/<script\b[^>]*>/g) ?? []
  expect(tags.length).toBeGreaterThan(0)
  for (const tag of tags) expect(tag, path).toContain(`nonce="${nonce}"`)
}

test('every page carries the security headers, the sign-in and not-found pages too, and runs under the nonce', async ({ browser, page }) => {
  const violations: string[] = []
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text())
  })
  await expectSecureHeaders(page, '/', 200)
  await expectSecureHeaders(page, '/messages', 200)
  await expectSecureHeaders(page, '/no-such-page', 404)
  const anonymous = await browser.newContext({ storageState: { cookies: [], origins: [] } })
  const signedOut = await anonymous.newPage()
  signedOut.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text())
  })
  await expectSecureHeaders(signedOut, '/sign-in', 200)
  // Hydrated: the form's client-side handler runs (a wrong password is answered in place, not by a page load).
  await signedOut.getByLabel('E-mail address').fill('nobody@lazarus.test')
  await signedOut.getByLabel('Password').fill('wrong password!')
  await signedOut.getByRole('button', { name: 'Sign in' }).click()
  await expect(signedOut.getByRole('alert').filter({ hasText: 'wrong' })).toBeVisible()
  await anonymous.close()
  expect(violations).toEqual([])
})

test('a viewer gets no Replay, Resolve or Pause controls, and the API refuses them anyway', async ({ page, request }) => {
  const email = `viewer-${RUN}@lazarus.test`
  await signInAs(page, request, email, { role: 'viewer' })
  await page.goto('/')
  await expect(page.getByTestId('user-role')).toHaveText('viewer')
  await expect(page.getByRole('link', { name: 'Audit' })).toHaveCount(0)
  await expect(page.getByRole('link', { name: 'Settings' })).toHaveCount(0)
  const group = page.getByRole('table', { name: 'Error groups' }).getByRole('link').first()
  if (await group.count()) {
    await group.click()
    await expect(page).toHaveURL(/\/groups\/\d+/)
    await expect(page.getByRole('button', { name: /Replay/ })).toHaveCount(0)
    await expect(page.getByRole('button', { name: /Resolve/ })).toHaveCount(0)
  }
  await page.goto('/pauses')
  await expect(page.getByRole('form', { name: 'Pause an entity' })).toHaveCount(0)
  // The browser's own session, asking anyway: refused.
  const origin = new URL(page.url()).origin
  const replay = await page.request.post('/api/replays', { data: { selection: { filter: {} }, dryRun: true }, headers: { origin } })
  expect(replay.status()).toBe(403)
  const raw = await page.request.get('/api/settings/redaction')
  expect(raw.status()).toBe(403)
})
