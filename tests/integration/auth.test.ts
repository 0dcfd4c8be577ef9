import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as signIn from '@/app/api/auth/sign-in/route'
import * as signOut from '@/app/api/auth/sign-out/route'
import * as sessionRoute from '@/app/api/auth/session/route'
import * as setup from '@/app/api/auth/setup/route'
import * as setPassword from '@/app/api/auth/set-password/route'
import * as users from '@/app/api/users/route'
import * as user from '@/app/api/users/[id]/route'
import * as tokens from '@/app/api/tokens/route'
import * as token from '@/app/api/tokens/[id]/route'
import * as sources from '@/app/api/sources/route'
import * as metrics from '@/app/api/metrics/route'
import * as pauses from '@/app/api/pauses/route'
import { prepareFirstRun } from '@/lib/server/auth/first-run'
import { SIGN_IN_LIMITS } from '@/lib/server/auth/sign-in'
import { getConfig } from '@/lib/server/platform/config'
import { logger } from '@/lib/server/platform/log'
import { ADMIN_AUTH, createTestUser } from '../helpers/auth'
import { callRoute, type RouteModule } from '../helpers/call-route'
import { captureLogs } from '../helpers/capture-logs'
import { createTestDb, type TestDb } from '../helpers/test-db'

/*
 * Sign-in end to end through the route handlers against PostgreSQL: the first run, local accounts with their limits,
 * sessions (cookie, idle and absolute end, sign-out), invitations, API tokens and their rules.
 */

const ORIGIN = 'http://lazarus.test'
const call = (module: RouteModule, method: string, path: string, { body, headers = {}, params = {} }: { body?: unknown; headers?: Record<string, string>; params?: Record<string, string> } = {}) =>
  callRoute(
    module,
    method as 'GET',
    new Request(ORIGIN + path, {
      method,
      headers: { 'content-type': 'application/json', origin: ORIGIN, ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    params,
    { anonymous: true },
  )

const cookieOf = (response: Response) => /lazarus_session=([^;]*)/.exec(response.headers.get('set-cookie') ?? '')?.[1] ?? ''
const withCookie = (cookie: string) => ({ cookie: `lazarus_session=${cookie}` })

describe('sign-in', () => {
  let db: TestDb
  const log = logger('test')

  beforeAll(async () => {
    db = await createTestDb()
  })
  afterAll(async () => db?.drop())

  it('first run: no user yet, a one-time setup link creates the first admin, and only once', async () => {
    const { entries, notices } = await captureLogs(() => prepareFirstRun({ db, config: { ...getConfig(), LAZARUS_ADMIN_EMAIL: undefined, LAZARUS_ADMIN_PASSWORD: undefined }, log }))
    const printed = entries.map((e) => `${e.level} ${e.msg} ${e.setupUrl ?? ''}`).join('\n')
    expect(entries.map((e) => e.level)).toEqual(['warn'])
    const link = /\/setup#token=([A-Za-z0-9_-]+)/.exec(printed)
    expect(link, printed).not.toBeNull()
    // The same link as one plain line on the console (stderr), between two rules as wide as it, with blank lines around.
    expect(notices).toHaveLength(1)
    const [blank, rule, line, closing, ...rest] = notices[0].split('\n')
    expect(line).toBe(`Lazarus: create the first admin at ${entries[0].setupUrl}  (valid 24 h)`)
    expect(line).toMatch(/^Lazarus: create the first admin at https?:\/\/\S+\/setup#token=[A-Za-z0-9_-]+ {2}\(valid 24 h\)$/)
    expect([blank, rule, closing, rest]).toEqual(['', '='.repeat(line.length), '='.repeat(line.length), ['', '']])
    expect(await (await call(sessionRoute, 'GET', '/api/auth/session')).json()).toMatchObject({ signedIn: false, needsSetup: true })
    expect((await call(setup, 'POST', '/api/auth/setup', { body: { token: 'x'.repeat(43), email: 'root@lazarus.test', password: 'long enough password' } })).status).toBe(403)
    const created = await call(setup, 'POST', '/api/auth/setup', { body: { token: link![1], email: 'root@lazarus.test', password: 'long enough password' } })
    expect(created.status).toBe(201)
    const cookie = cookieOf(created)
    expect(cookie).not.toBe('')
    expect(created.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Lax/)
    expect(await (await call(sessionRoute, 'GET', '/api/auth/session', { headers: withCookie(cookie) })).json()).toMatchObject({
      signedIn: true,
      user: { email: 'root@lazarus.test', via: 'session' },
      roles: [{ role: 'admin', sourcePattern: null }],
    })
    // Used once: a second attempt fails, and so does setting up again while a user exists.
    expect((await call(setup, 'POST', '/api/auth/setup', { body: { token: link![1], email: 'two@lazarus.test', password: 'long enough password' } })).status).toBe(403)
    const { rows } = await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM users')
    expect(rows[0].n).toBe(1)
    // With users present, first run does nothing (no new link logged).
    const again = await captureLogs(() => prepareFirstRun({ db, config: getConfig(), log }))
    expect(again.entries).toEqual([])
    expect(again.notices).toEqual([])
  })

  it('an invited user sets a password with the one-time link, then signs in; a wrong password is refused alike for unknown accounts', async () => {
    const invited = await callRoute(users, 'POST', new Request(`${ORIGIN}/api/users`, { method: 'POST', headers: ADMIN_AUTH, body: JSON.stringify({ email: 'Vic@Lazarus.test', roles: [{ role: 'viewer' }] }) }))
    expect(invited.status).toBe(201)
    const { user: created, setPasswordUrl } = await invited.json()
    expect(created).toMatchObject({ email: 'vic@lazarus.test', invited: true, roles: [{ role: 'viewer', sourcePattern: null, origin: 'manual' }] })
    const linkToken = new URL(setPasswordUrl).hash.replace('#token=', '')
    expect((await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'vic@lazarus.test', password: 'anything at all' } })).status).toBe(401)
    const set = await call(setPassword, 'POST', '/api/auth/set-password', { body: { token: linkToken, password: 'vics password 1' } })
    expect(set.status).toBe(200)
    expect((await call(setPassword, 'POST', '/api/auth/set-password', { body: { token: linkToken, password: 'another password' } })).status).toBe(403)
    const ok = await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'VIC@lazarus.test', password: 'vics password 1' } })
    expect(ok.status).toBe(200)
    const wrong = await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'vic@lazarus.test', password: 'not it at all' } })
    const unknown = await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'nobody@lazarus.test', password: 'not it at all' } })
    expect([wrong.status, unknown.status]).toEqual([401, 401])
    expect((await wrong.json()).error.message).toBe((await unknown.json()).error.message)
    const audit = await db.sql.query<{ action: string; actor: string }>(`SELECT action, actor FROM audit_log WHERE action LIKE 'auth.%' ORDER BY id`)
    expect(audit.rows.map((r) => r.action)).toEqual(expect.arrayContaining(['auth.signed-in', 'auth.sign-in-failed']))
  })

  it('a sign-in request from another origin, or not as JSON, is refused (login CSRF)', async () => {
    const cross = await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'vic@lazarus.test', password: 'vics password 1' }, headers: { origin: 'http://127.0.0.1:8999' } })
    expect(cross.status).toBe(403)
    const form = await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'vic@lazarus.test', password: 'vics password 1' }, headers: { 'content-type': 'text/plain' } })
    expect(form.status).toBe(403)
  })

  it('brute force: after the limit per account, even the right password is refused until the window passes', async () => {
    await createTestUser(db, 'brute', [{ role: 'viewer' }])
    await db.sql.query(`UPDATE users SET password_hash = (SELECT password_hash FROM users WHERE email = 'vic@lazarus.test') WHERE email = 'brute@lazarus.test'`)
    for (let i = 0; i < SIGN_IN_LIMITS.accountFailures; i++) {
      expect((await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'brute@lazarus.test', password: `guess number ${i}` } })).status).toBe(401)
    }
    const locked = await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'brute@lazarus.test', password: 'vics password 1' } })
    expect(locked.status).toBe(429)
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0)
    // Other accounts are not locked by it.
    expect((await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'vic@lazarus.test', password: 'vics password 1' } })).status).toBe(200)
    // Once the failures are older than the window, the account works again.
    await db.sql.query(`UPDATE sign_in_attempts SET at = at - $1::int * interval '1 minute' WHERE email = 'brute@lazarus.test'`, [SIGN_IN_LIMITS.windowMinutes + 1])
    expect((await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'brute@lazarus.test', password: 'vics password 1' } })).status).toBe(200)
  })

  it('brute force across accounts from one address is limited per address too', async () => {
    await db.sql.query(`INSERT INTO sign_in_attempts (email, ip, succeeded) SELECT 'spray' || g || '@lazarus.test', 'unknown', false FROM generate_series(1, $1::int) g`, [SIGN_IN_LIMITS.addressFailures])
    expect((await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'vic@lazarus.test', password: 'vics password 1' } })).status).toBe(429)
    await db.sql.query(`DELETE FROM sign_in_attempts WHERE email LIKE 'spray%'`)
  })

  it('sessions end on sign-out (server-side), after the idle limit, and at the absolute limit', async () => {
    const signedIn = async () => cookieOf(await call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'vic@lazarus.test', password: 'vics password 1' } }))
    const works = async (cookie: string) => (await call(sources, 'GET', '/api/sources', { headers: withCookie(cookie) })).status === 200

    const a = await signedIn()
    expect(await works(a)).toBe(true)
    const out = await call(signOut, 'POST', '/api/auth/sign-out', { headers: withCookie(a) })
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/)
    expect(await works(a)).toBe(false)

    const b = await signedIn()
    await db.sql.query(`UPDATE sessions SET last_seen_at = now() - $1::int * interval '1 minute' - interval '1 minute' WHERE revoked_at IS NULL`, [getConfig().LAZARUS_SESSION_IDLE_MINUTES])
    expect(await works(b)).toBe(false)

    const c = await signedIn()
    await db.sql.query(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE revoked_at IS NULL AND last_seen_at > now() - interval '1 minute'`)
    expect(await works(c)).toBe(false)
    expect((await call(sources, 'GET', '/api/sources', { headers: withCookie(c) })).status).toBe(401)
  })

  it('disabling a user ends their sessions and their tokens at once', async () => {
    const dana = await createTestUser(db, 'dana', [{ role: 'operator' }])
    expect((await call(sources, 'GET', '/api/sources', { headers: { authorization: dana.authorization } })).status).toBe(200)
    const disabled = await callRoute(user, 'PATCH', new Request(`${ORIGIN}/api/users/${dana.userId}`, { method: 'PATCH', headers: ADMIN_AUTH, body: JSON.stringify({ disabled: true }) }), { id: dana.userId })
    expect(disabled.status).toBe(200)
    expect((await call(sources, 'GET', '/api/sources', { headers: { authorization: dana.authorization } })).status).toBe(401)
  })

  describe('API tokens', () => {
    it('are shown once, stored as SHA-256 only, and record when they were last used (at most once a minute)', async () => {
      const erin = await createTestUser(db, 'erin', [{ role: 'operator' }])
      const { rows } = await db.sql.query<{ token_hash: Buffer; last_used_at: Date | null }>(`SELECT token_hash, last_used_at FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE u.email = 'erin@lazarus.test'`)
      expect(rows[0].token_hash).toHaveLength(32)
      expect(rows[0].token_hash.toString('utf8')).not.toContain(erin.token.slice(4, 20))
      expect(rows[0].last_used_at).toBeNull()
      await call(sources, 'GET', '/api/sources', { headers: { authorization: erin.authorization } })
      const first = (await db.sql.query<{ at: Date }>(`SELECT last_used_at AS at FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE u.email = 'erin@lazarus.test'`)).rows[0].at
      await call(sources, 'GET', '/api/sources', { headers: { authorization: erin.authorization } })
      const second = (await db.sql.query<{ at: Date }>(`SELECT last_used_at AS at FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE u.email = 'erin@lazarus.test'`)).rows[0].at
      expect(first).not.toBeNull()
      expect(second).toEqual(first)
    })

    it('are created for a role no higher than the creator\'s, revoked at once, and die when the creator loses the role', async () => {
      const fay = await createTestUser(db, 'fay', [{ role: 'operator' }])
      const sessionCookie = cookieOf(await (async () => {
        await db.sql.query(`UPDATE users SET password_hash = (SELECT password_hash FROM users WHERE email = 'vic@lazarus.test') WHERE id = $1::bigint`, [fay.userId])
        return call(signIn, 'POST', '/api/auth/sign-in', { body: { email: 'fay@lazarus.test', password: 'vics password 1' } })
      })())
      const create = (body: unknown) => call(tokens, 'POST', '/api/tokens', { body, headers: withCookie(sessionCookie) })
      expect((await create({ name: 'too high', role: 'admin' })).status).toBe(403)
      expect((await create({ name: 'metrics', scope: 'metrics' })).status).toBe(403)
      const made = await create({ name: 'ci', role: 'viewer', expiresInDays: 30 })
      expect(made.status).toBe(201)
      const { token: secret, apiToken } = await made.json()
      expect(secret).toMatch(/^lzr_[A-Za-z0-9_-]{43}$/)
      expect(apiToken).toMatchObject({ name: 'ci', role: 'viewer', owner: { email: 'fay@lazarus.test' } })
      const bearer = { authorization: `Bearer ${secret}` }
      expect((await call(sources, 'GET', '/api/sources', { headers: bearer })).status).toBe(200)
      // A token cannot make tokens.
      expect((await call(tokens, 'POST', '/api/tokens', { body: { name: 'child', role: 'viewer' }, headers: bearer })).status).toBe(403)
      // Fay loses every role: her token dies with it.
      await callRoute(user, 'PATCH', new Request(`${ORIGIN}/api/users/${fay.userId}`, { method: 'PATCH', headers: ADMIN_AUTH, body: JSON.stringify({ roles: [] }) }), { id: fay.userId })
      expect((await call(sources, 'GET', '/api/sources', { headers: bearer })).status).toBe(401)
      // Given the role back, it works again; revoked, it is dead for good.
      await callRoute(user, 'PATCH', new Request(`${ORIGIN}/api/users/${fay.userId}`, { method: 'PATCH', headers: ADMIN_AUTH, body: JSON.stringify({ roles: [{ role: 'viewer' }] }) }), { id: fay.userId })
      expect((await call(sources, 'GET', '/api/sources', { headers: bearer })).status).toBe(200)
      expect((await call(token, 'DELETE', `/api/tokens/${apiToken.id}`, { headers: withCookie(sessionCookie), params: { id: apiToken.id } })).status).toBe(200)
      expect((await call(sources, 'GET', '/api/sources', { headers: bearer })).status).toBe(401)
      const audit = await db.sql.query<{ action: string }>(`SELECT action FROM audit_log WHERE subject_type = 'token' AND subject_id = $1 ORDER BY id`, [apiToken.id])
      expect(audit.rows.map((r) => r.action)).toEqual(['token.created', 'token.revoked'])
    })

    it('an expired token is refused; a malformed Authorization header is refused, not ignored', async () => {
      const gil = await createTestUser(db, 'gil', [{ role: 'viewer' }])
      await db.sql.query(`UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE user_id = $1::bigint`, [gil.userId])
      expect((await call(sources, 'GET', '/api/sources', { headers: { authorization: gil.authorization } })).status).toBe(401)
      expect((await call(sources, 'GET', '/api/sources', { headers: { authorization: 'Basic dXNlcjpwYXNz' } })).status).toBe(401)
    })

    it('metrics tokens read /api/metrics only; guard tokens read their own queue\'s pauses only', async () => {
      const prom = await createTestUser(db, 'prom', [{ role: 'admin' }], { scope: 'metrics' })
      expect((await call(metrics, 'GET', '/api/metrics', { headers: { authorization: prom.authorization } })).status).toBe(200)
      expect((await call(sources, 'GET', '/api/sources', { headers: { authorization: prom.authorization } })).status).toBe(403)
      const src = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('guarded.dlq') RETURNING id::text`)).rows[0].id
      await db.sql.query(
        `INSERT INTO pauses (source_id, vhost, queue, entity_key, entity_key_rule, status, reason, created_by, version)
         VALUES ($1::bigint, '/', 'orders.work', 'o-1', '{"kind":"header","name":"x-entity-key"}', 'active', 'r', 'x', nextval('pause_registry_version')),
                ($1::bigint, '/', 'billing.work', 'b-1', '{"kind":"header","name":"x-entity-key"}', 'active', 'r', 'x', nextval('pause_registry_version'))`,
        [src],
      )
      const guard = await createTestUser(db, 'guard', [{ role: 'operator' }], { scope: 'guard', guardQueue: 'orders.work' })
      // Whatever queue the guard asks for, it gets its own.
      const listed = await (await call(pauses, 'GET', '/api/pauses?status=active&queue=billing.work', { headers: { authorization: guard.authorization } })).json()
      expect(listed.pauses.map((p: { queue: string }) => p.queue)).toEqual(['orders.work'])
      expect((await call(sources, 'GET', '/api/sources', { headers: { authorization: guard.authorization } })).status).toBe(403)
    })
  })
})
