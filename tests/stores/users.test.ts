import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  anyUser, countUsers, findAccountByEmail, insertAdmin, lockFirstRun, recentFailedAttempts, recordSignInAttempt, saveOidcFlow, setPasswordHash,
  takeOidcFlow, touchIfDue,
} from '@/lib/server/auth/auth-store'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { findApiToken, findTokenOwner, insertApiToken, listApiTokensOf, markApiTokenRevoked, type NewApiToken } from '@/lib/server/users/api-token-store'
import {
  countEnabledAdmins, emailTaken, findUser, insertLocalUser, listUsersInOrder, lockUser, replaceManualBindings, revokeUserSessions, updateUserColumns,
} from '@/lib/server/users/users-store'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'

/**
 * Accounts on either engine: the sign-in SQL (lib/server/auth/auth-store.ts), and users and API tokens through Prisma
 * (lib/server/users/users-store.ts, api-token-store.ts; on PGlite through pglite-prisma-adapter), with the SQL helpers
 * that run inside a CRUD transaction. The first-run lock between two processes starting at once is PostgreSQL-only.
 */
let db: EngineDb
let adminId: string
beforeAll(async () => {
  db = await createEngineDb()
})
afterAll(async () => db?.drop())

describe('the first admin and local accounts', () => {
  it('creates the first admin with its binding under the first-run lock, then finds it by address in any letter case', async () => {
    expect(await anyUser({ sql: db.sql })).toBe(false)
    adminId = await db.sql.transaction(async (tx) => {
      await lockFirstRun({ sql: tx })
      return insertAdmin({ sql: tx, email: 'Admin_1@Lazarus.test', displayName: 'Ada', passwordHash: 'hash-1' })
    })
    expect(await anyUser({ sql: db.sql })).toBe(true)
    expect(await countUsers({ sql: db.sql })).toBe(1)
    expect(await findAccountByEmail({ sql: db.sql, email: 'admin_1@lazarus.TEST' })).toEqual({ id: adminId, email: 'Admin_1@Lazarus.test', password_hash: 'hash-1', disabled: false })
    // `_` is a character, not a wildcard.
    expect(await findAccountByEmail({ sql: db.sql, email: 'adminX1@lazarus.test' })).toBeUndefined()
    expect(await findUser({ prisma: db.prisma, id: adminId })).toMatchObject({ email: 'Admin_1@Lazarus.test', roles: [{ role: 'admin', sourcePattern: null, origin: 'manual' }] })
    expect(await countEnabledAdmins({ prisma: db.prisma })).toBe(1)
  })

  it('sets a password only for an enabled user', async () => {
    expect(await setPasswordHash({ sql: db.sql, userId: adminId, passwordHash: 'hash-2' })).toBe('Admin_1@Lazarus.test')
    const userId = await insertLocalUser({ prisma: db.prisma, email: 'off@lazarus.test', displayName: null })
    await updateUserColumns({ prisma: db.prisma, id: userId, disabled: true })
    expect(await setPasswordHash({ sql: db.sql, userId, passwordHash: 'hash-x' })).toBeNull()
    expect((await findAccountByEmail({ sql: db.sql, email: 'off@lazarus.test' }))).toMatchObject({ password_hash: null, disabled: true })
  })
})

describe('users through Prisma', () => {
  it('tells an address taken in any letter case, on the pool and inside a CRUD transaction', async () => {
    await insertLocalUser({ prisma: db.prisma, email: 'Bea@Lazarus.test', displayName: 'Bea' })
    expect(await emailTaken({ sql: db.sql, email: 'bea@lazarus.test' })).toBe(true)
    expect(await emailTaken({ sql: db.sql, email: 'b%a@lazarus.test' })).toBe(false)
    const inTransaction = await crudTransaction(db, async ({ sql }) => [await emailTaken({ sql, email: 'BEA@lazarus.test' }), await emailTaken({ sql, email: 'nobody@lazarus.test' })])
    expect(inTransaction).toEqual([true, false])
  })

  it('keeps the first time a user was disabled, signs their sessions out, and lists enabled admins first', async () => {
    const userId = await insertLocalUser({ prisma: db.prisma, email: 'cy@lazarus.test', displayName: 'Cy' })
    await db.prisma.session.create({ data: { userId: BigInt(userId), tokenHash: createHash('sha256').update('cy').digest(), method: 'local', expiresAt: new Date(Date.now() + 3_600_000) } })
    await crudTransaction(db, async ({ prisma, sql }) => {
      await lockUser({ sql, id: userId })
      await updateUserColumns({ prisma, id: userId, disabled: true })
      await revokeUserSessions({ prisma, userId })
    })
    const first = (await db.prisma.user.findUniqueOrThrow({ where: { id: BigInt(userId) } })).disabledAt
    expect(first).toBeInstanceOf(Date)
    await updateUserColumns({ prisma: db.prisma, id: userId, disabled: true, displayName: 'Cy C.' })
    const again = await db.prisma.user.findUniqueOrThrow({ where: { id: BigInt(userId) } })
    expect([again.disabledAt, again.displayName]).toEqual([first, 'Cy C.'])
    expect(await db.prisma.session.count({ where: { userId: BigInt(userId), revokedAt: null } })).toBe(0)

    const listed = await listUsersInOrder({ prisma: db.prisma, limit: 100 })
    expect(listed[0].email).toBe('Admin_1@Lazarus.test')
    expect(listed.slice(-2).map((u) => [u.email, u.disabled])).toEqual([['cy@lazarus.test', true], ['off@lazarus.test', true]])
    expect((await listUsersInOrder({ prisma: db.prisma, limit: 1 })).map((u) => u.email)).toEqual(['Admin_1@Lazarus.test'])
  })

  it('replaces the bindings set by hand, keeps those from identity-provider groups, and keeps a binding given twice once', async () => {
    const userId = await insertLocalUser({ prisma: db.prisma, email: 'dee@lazarus.test', displayName: null })
    await db.prisma.roleBinding.create({ data: { userId: BigInt(userId), role: 'viewer', sourcePattern: null, origin: 'group' } })
    await replaceManualBindings({ prisma: db.prisma, userId, bindings: [{ role: 'operator', sourcePattern: 'orders.*' }, { role: 'operator', sourcePattern: 'orders.*' }] })
    await replaceManualBindings({ prisma: db.prisma, userId, bindings: [{ role: 'operator', sourcePattern: 'billing.*' }, { role: 'viewer', sourcePattern: '' }] })
    const bindings = await db.prisma.roleBinding.findMany({ where: { userId: BigInt(userId) }, orderBy: { id: 'asc' } })
    expect(bindings.map((b) => [b.role, b.sourcePattern, b.origin])).toEqual([['viewer', null, 'group'], ['operator', 'billing.*', 'manual'], ['viewer', null, 'manual']])
  })
})

describe('API tokens through Prisma', () => {
  it('are created for an owner, listed in use first and newest first, and revoked once', async () => {
    const token = (name: string, days: number | null): NewApiToken => ({
      name, tokenHash: createHash('sha256').update(name).digest(), userId: adminId, guardVhost: null, days,
      grant: { role: 'operator', sourcePattern: 'orders.*', scope: null, guardQueue: null },
    })
    expect(await findTokenOwner({ prisma: db.prisma, userId: adminId })).toEqual({ email: 'Admin_1@Lazarus.test', disabled: false, bindings: [{ role: 'admin', sourcePattern: null }] })
    expect(await findTokenOwner({ prisma: db.prisma, userId: '999999' })).toBeNull()
    const old = await insertApiToken({ prisma: db.prisma, token: token('old', null) })
    const newer = await insertApiToken({ prisma: db.prisma, token: token('newer', 30) })
    const dto = await findApiToken({ prisma: db.prisma, id: newer })
    expect(dto).toMatchObject({ id: newer, name: 'newer', owner: { id: adminId, email: 'Admin_1@Lazarus.test' }, role: 'operator', sourcePattern: 'orders.*', revokedAt: null })
    expect(Date.parse(dto.expiresAt!) - Date.parse(dto.createdAt)).toBeGreaterThan(29 * 86_400_000)

    await markApiTokenRevoked({ prisma: db.prisma, id: newer })
    const revokedAt = (await findApiToken({ prisma: db.prisma, id: newer })).revokedAt
    expect(revokedAt).not.toBeNull()
    await markApiTokenRevoked({ prisma: db.prisma, id: newer })
    expect((await findApiToken({ prisma: db.prisma, id: newer })).revokedAt).toBe(revokedAt)
    expect((await listApiTokensOf({ prisma: db.prisma, ownerId: adminId, limit: 10 })).map((t) => t.id)).toEqual([old, newer])
    expect((await listApiTokensOf({ prisma: db.prisma, ownerId: null, limit: 1 })).map((t) => t.id)).toEqual([old])
    await expect(findApiToken({ prisma: db.prisma, id: '999999' })).rejects.toMatchObject({ code: 'not_found' })
  })

  it('are touched at most once a minute', async () => {
    const id = await insertApiToken({ prisma: db.prisma, token: { name: 'touched', tokenHash: createHash('sha256').update('touched').digest(), userId: adminId, guardVhost: null, days: null, grant: { role: 'viewer', sourcePattern: null, scope: null, guardQueue: null } } })
    const lastUsed = async () => (await db.sql.query<{ at: Date | null }>('SELECT last_used_at AS at FROM api_tokens WHERE id = $1::bigint', [id])).rows[0].at
    await touchIfDue({ sql: db.sql, table: 'api_tokens', id, lastAt: new Date() })
    expect(await lastUsed()).toBeNull()
    await touchIfDue({ sql: db.sql, table: 'api_tokens', id, lastAt: null })
    expect(await lastUsed()).toBeInstanceOf(Date)
  })
})

describe('sign-in bookkeeping', () => {
  it('counts recent failed attempts per address and per account, at most up to the limit', async () => {
    for (let i = 0; i < 3; i++) await recordSignInAttempt({ sql: db.sql, email: 'Eve@lazarus.test', ip: '10.0.0.9', succeeded: false })
    await recordSignInAttempt({ sql: db.sql, email: 'eve@lazarus.test', ip: '10.0.0.8', succeeded: true })
    const byEmail = await recentFailedAttempts({ sql: db.sql, by: 'email', value: 'EVE@lazarus.test', windowMinutes: 15, limit: 10 })
    expect(byEmail.n).toBe(3)
    expect(byEmail.oldest).toBeInstanceOf(Date)
    expect((await recentFailedAttempts({ sql: db.sql, by: 'ip', value: '10.0.0.9', windowMinutes: 15, limit: 2 })).n).toBe(2)
    expect(await recentFailedAttempts({ sql: db.sql, by: 'ip', value: '10.0.0.8', windowMinutes: 15, limit: 10 })).toEqual({ n: 0, oldest: null })
  })

  it('completes a single sign-on flow once, and never an expired one', async () => {
    const flow = { state: 's-1', browserHash: Buffer.from([1, 2, 0, 255]), nonce: 'n', codeVerifier: 'v', returnTo: '/groups' }
    await saveOidcFlow({ sql: db.sql, flow, minutes: 10 })
    expect(await takeOidcFlow({ sql: db.sql, state: 's-1' })).toEqual({ nonce: 'n', codeVerifier: 'v', returnTo: '/groups', browserHash: flow.browserHash })
    expect(await takeOidcFlow({ sql: db.sql, state: 's-1' })).toBeUndefined()
    await saveOidcFlow({ sql: db.sql, flow: { ...flow, state: 's-2' }, minutes: 10 })
    await db.sql.query(`UPDATE oidc_flows SET expires_at = now() - interval '1 second' WHERE state = 's-2'`)
    expect(await takeOidcFlow({ sql: db.sql, state: 's-2' })).toBeUndefined()
    // Saving a flow forgets the expired ones.
    await saveOidcFlow({ sql: db.sql, flow: { ...flow, state: 's-3' }, minutes: 10 })
    expect((await db.sql.query<{ state: string }>('SELECT state FROM oidc_flows ORDER BY state')).rows).toEqual([{ state: 's-3' }])
  })
})
