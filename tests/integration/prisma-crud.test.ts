import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listAudit } from '@/lib/server/audit/list-audit'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { getWebhookSettings, updateWebhookSettings } from '@/lib/server/alerts/webhook-settings'
import { openDb, type Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { createSource } from '@/lib/server/sources/create-source'
import { deleteSource } from '@/lib/server/sources/delete-source'
import { listSources } from '@/lib/server/sources/list-sources'
import { updateSource } from '@/lib/server/sources/update-source'
import { createApiToken } from '@/lib/server/users/create-api-token'
import { createUser } from '@/lib/server/users/create-user'
import { listApiTokens } from '@/lib/server/users/list-api-tokens'
import { listUsers } from '@/lib/server/users/list-users'
import { revokeApiToken } from '@/lib/server/users/revoke-api-token'
import { updateUser } from '@/lib/server/users/update-user'
import { createSourceSchema, updateSourceSchema } from '@/lib/shared/schemas/source'
import { createTokenSchema, createUserSchema } from '@/lib/shared/schemas/user'
import { PROVISIONING_ADMIN } from '../helpers/auth'
import { createTestDb } from '../helpers/test-db'

/**
 * The CRUD that goes through Prisma (users, API tokens, sources, settings), with its audit entry written by SQL in the
 * same transaction (lib/server/platform/db/crud-transaction.ts), on both databases Lazarus runs on: PostgreSQL through
 * @prisma/adapter-pg, and the embedded PGlite (DATABASE_URL unset) through pglite-prisma-adapter. The DTOs must come
 * out as the API has always shaped them: ids as strings, times as ISO strings.
 */

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const ID = /^[1-9][0-9]*$/

type Opened = { db: Db; kind: Db['sql']['kind']; close(): Promise<void> }

async function embedded(): Promise<Opened> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lazarus-prisma-crud-'))
  const db = await openDb({ dataDir: dir })
  return { db, kind: 'pglite', close: async () => { await db.close(); await rm(dir, { recursive: true, force: true }) } }
}

async function postgres(): Promise<Opened> {
  const db = await createTestDb()
  return { db, kind: 'postgres', close: () => db.drop() }
}

describe.each([
  ['PGlite', embedded],
  ['PostgreSQL', postgres],
])('Prisma CRUD on %s', (_name, open) => {
  let opened: Opened
  let db: Db
  const baseUrl = 'http://lazarus.test'

  beforeAll(async () => {
    opened = await open()
    db = opened.db
  })
  afterAll(async () => {
    await opened?.close()
  })

  it('runs on the database it is meant for', () => {
    expect(db.sql.kind).toBe(opened.kind)
  })

  it('creates a user and a token, lists, changes and revokes them, with the API shapes and an audit entry each', async () => {
    const { user, setPasswordUrl } = await createUser({ db, actor: 'admin', input: createUserSchema.parse({ email: 'ann_lee@lazarus.test', roles: [{ role: 'operator', sourcePattern: 'orders.*' }] }), baseUrl })
    expect(user).toEqual({
      id: expect.stringMatching(ID),
      email: 'ann_lee@lazarus.test',
      displayName: null,
      authSource: 'local',
      roles: [{ role: 'operator', sourcePattern: 'orders.*', origin: 'manual' }],
      disabled: false,
      invited: true,
      lastSignInAt: null,
      createdAt: expect.stringMatching(ISO),
    })
    expect(setPasswordUrl).toMatch(/^http:\/\/lazarus\.test\/set-password#token=/)
    // `_` is no wildcard: another address that only it would match is not taken.
    await createUser({ db, actor: 'admin', input: createUserSchema.parse({ email: 'annxlee@lazarus.test' }), baseUrl })
    await expect(createUser({ db, actor: 'admin', input: createUserSchema.parse({ email: 'Ann_Lee@Lazarus.test' }), baseUrl })).rejects.toMatchObject({ code: 'conflict' })

    const { token, apiToken } = await createApiToken({ db, principal: PROVISIONING_ADMIN, input: createTokenSchema.parse({ name: 'ci', role: 'viewer', sourcePattern: 'orders.*', userId: user.id }) })
    expect(token).toMatch(/^lzr_/)
    expect(apiToken).toEqual({
      id: expect.stringMatching(ID),
      name: 'ci',
      owner: { id: user.id, email: 'ann_lee@lazarus.test' },
      role: 'viewer',
      sourcePattern: 'orders.*',
      scope: null,
      guardQueue: null,
      expiresAt: expect.stringMatching(ISO),
      lastUsedAt: null,
      revokedAt: null,
      createdAt: expect.stringMatching(ISO),
    })
    const older = (await createApiToken({ db, principal: PROVISIONING_ADMIN, input: createTokenSchema.parse({ name: 'old', role: 'viewer', sourcePattern: 'orders.*', userId: user.id }) })).apiToken

    expect((await listUsers({ db })).users.map((u) => u.email)).toEqual(expect.arrayContaining(['ann_lee@lazarus.test', 'annxlee@lazarus.test']))
    const revoked = await revokeApiToken({ db, principal: PROVISIONING_ADMIN, id: older.id })
    expect(revoked.revokedAt).toMatch(ISO)
    // Tokens in use first, then revoked ones.
    expect((await listApiTokens({ db, principal: PROVISIONING_ADMIN })).tokens.map((t) => t.name)).toEqual(['ci', 'old'])

    const renamed = await updateUser({ db, principal: PROVISIONING_ADMIN, id: user.id, input: { displayName: 'Ann', roles: [{ role: 'viewer', sourcePattern: null }], disabled: true } })
    expect(renamed).toMatchObject({ displayName: 'Ann', roles: [{ role: 'viewer', sourcePattern: null, origin: 'manual' }], disabled: true })
    // Disabled users go last.
    expect((await listUsers({ db })).users.at(-1)?.email).toBe('ann_lee@lazarus.test')

    const { entries } = await listAudit({ db, query: { limit: 50 } })
    expect(entries.filter((e) => e.action === 'user.created')).toHaveLength(2)
    expect(entries.filter((e) => e.action === 'token.created')).toHaveLength(2)
    expect(entries.find((e) => e.action === 'token.revoked')).toMatchObject({ subject: { type: 'token', id: older.id }, details: { after: { revokedAt: revoked.revokedAt } } })
  })

  it('rolls back the Prisma write and the SQL audit entry together', async () => {
    const count = async () => {
      const { rows } = await db.sql.query<{ users: number; audit: number }>('SELECT (SELECT count(*)::int FROM users) AS users, (SELECT count(*)::int FROM audit_log) AS audit')
      return rows[0]
    }
    const before = await count()
    const failed = crudTransaction(db, async ({ prisma, sql }) => {
      await prisma.user.create({ data: { email: 'gone@lazarus.test', authSource: 'local' } })
      await recordAudit({ sql, actor: 'tests', action: 'user.created', subject: { type: 'user', id: null }, summary: 'rolled back' })
      throw new Error('changed my mind')
    })
    await expect(failed).rejects.toThrow('changed my mind')
    expect(await count()).toEqual(before)
  })

  it('adds, changes and removes a source, and keeps the webhook settings', async () => {
    // Disabled: no broker is asked whether the queue is a work queue.
    const source = await createSource({ db, input: createSourceSchema.parse({ queue: 'crud.dlq', enabled: false }), actor: 'admin' })
    expect(source).toMatchObject({ id: expect.stringMatching(ID), queue: 'crud.dlq', enabled: false, drained: 0, createdAt: expect.stringMatching(ISO) })
    expect(await updateSource({ db, id: source.id, input: updateSourceSchema.parse({ orderSensitive: true }), actor: 'admin' })).toMatchObject({ orderSensitive: true })
    expect((await listSources({ db, withDepth: false })).sources.map((s) => s.queue)).toContain('crud.dlq')
    expect(await deleteSource({ db, id: source.id, actor: 'admin' })).toEqual({ id: source.id, deleted: true })

    expect(await getWebhookSettings({ db })).toMatchObject({ allowedHosts: [], updatedAt: null, updatedBy: null })
    const saved = await updateWebhookSettings({ db, input: { allowedHosts: ['10.0.0.0/8'] }, actor: 'admin' })
    expect(saved).toMatchObject({ allowedHosts: ['10.0.0.0/8'], updatedAt: expect.stringMatching(ISO), updatedBy: 'admin' })
    expect(await getWebhookSettings({ db })).toEqual(saved)
  })
})
