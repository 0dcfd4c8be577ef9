import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestUser, tokenActor, type TestUser } from '../helpers/auth'
import { createTestDb, type TestDb } from '../helpers/test-db'
import * as groupRoute from '@/app/api/groups/[id]/route'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { ingestRow } from '../helpers/ingest-row'

const row = () => ingestRow({ signature: 'v1:group-triage', title: 'Boom: boom' })

const users: Record<string, TestUser> = {}
const patch = async (id: string, body: unknown, user = 'dana') => {
  const response = await groupRoute.PATCH(
    new Request(`http://lazarus.test/api/groups/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json', authorization: users[user].authorization }, body: typeof body === 'string' ? body : JSON.stringify(body) }),
    { params: Promise.resolve({ id }) },
  )
  return { status: response.status, body: (await response.json()) as any }
}

describe('PATCH /api/groups/{id}', () => {
  let db: TestDb
  let sourceId: string
  let groupId: string

  beforeAll(async () => {
    db = await createTestDb()
    for (const name of ['dana', 'erin']) users[name] = await createTestUser(db, name, [{ role: 'operator' }])
    sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('triage.dlq') RETURNING id::text`)).rows[0].id
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'triage.dlq', rows: [row(), row()] })
    groupId = (await db.sql.query<{ id: string }>(`SELECT id::text FROM error_groups WHERE signature = 'v1:group-triage'`)).rows[0].id
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('sets status, note and ticket link, returns the group and audits who changed what', async () => {
    const result = await patch(groupId, { status: 'acknowledged', note: 'Stock service deploy 4.2 broke it', ticketUrl: 'https://jira.example.com/browse/OPS-42' })
    expect(result.status).toBe(200)
    expect(result.body).toMatchObject({ id: groupId, status: 'acknowledged', note: 'Stock service deploy 4.2 broke it', ticketUrl: 'https://jira.example.com/browse/OPS-42', count: 2 })
    const { rows } = await db.sql.query<{ actor: string; action: string; subject_id: string; details: any }>(`SELECT actor, action, subject_id, details FROM audit_log ORDER BY id DESC LIMIT 1`)
    expect(rows[0]).toMatchObject({ actor: tokenActor('dana'), action: 'group.updated', subject_id: groupId })
    expect(rows[0].details.status).toEqual({ from: 'open', to: 'acknowledged' })
  })

  it('clears the note and link with null, and writes no audit entry when nothing changes', async () => {
    expect((await patch(groupId, { note: null, ticketUrl: null })).body).toMatchObject({ note: null, ticketUrl: null })
    const before = (await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log')).rows[0].n
    expect((await patch(groupId, { status: 'acknowledged' })).status).toBe(200)
    expect((await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log')).rows[0].n).toBe(before)
  })

  it('a resolved group reopens when new failures arrive; a muted one stays muted', async () => {
    expect((await patch(groupId, { status: 'resolved' })).body.status).toBe('resolved')
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'triage.dlq', rows: [row()] })
    expect((await db.sql.query<{ status: string }>('SELECT status FROM error_groups WHERE id = $1', [groupId])).rows[0].status).toBe('open')
    await patch(groupId, { status: 'muted' })
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'triage.dlq', rows: [row()] })
    expect((await db.sql.query<{ status: string }>('SELECT status FROM error_groups WHERE id = $1', [groupId])).rows[0].status).toBe('muted')
  })

  it.each([
    ['an unknown status', { status: 'fixed' }, 400, /status/],
    ['a javascript: link', { ticketUrl: 'javascript:alert(1)' }, 400, /http/],
    ['a link that is no URL', { ticketUrl: 'OPS-42' }, 400, /URL/],
    ['an empty change', {}, 400, /at least one/],
    ['an unknown field', { title: 'x' }, 400, /title|Unrecognized/i],
    ['malformed JSON', '{"status":', 400, /JSON/],
  ])('refuses %s with a 400 and a message', async (_name, body, status, message) => {
    const result = await patch(groupId, body)
    expect(result.status).toBe(status)
    expect(result.body.error.message).toMatch(message)
  })

  it.each([['999999'], ['abc']])('answers 404 for group %s', async (id) => {
    const result = await patch(id, { status: 'open' })
    expect(result.status).toBe(404)
    expect(result.body.error.code).toBe('not_found')
  })
})
