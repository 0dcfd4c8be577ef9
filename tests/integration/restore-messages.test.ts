import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as resolveRoute from '@/app/api/messages/resolve/route'
import * as restoreRoute from '@/app/api/messages/restore/route'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { runRetention } from '@/lib/server/engines/retention/run-retention'
import { createTestUser, type TestUser } from '../helpers/auth'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'

/* Issue 18, "Restore": resolved messages go back to dead with a reason, audited, and retention no longer deletes them. */
describe('restoring resolved messages', () => {
  let db: TestDb
  let operator: TestUser
  let viewer: TestUser
  let groupId: string
  let ids: string[]

  const post = async (handler: typeof restoreRoute.POST, body: unknown, user: TestUser) =>
    handler(
      new Request('http://lazarus.test/api/messages', { method: 'POST', headers: { authorization: user.authorization, 'content-type': 'application/json', origin: 'http://lazarus.test' }, body: JSON.stringify(body) }),
      { params: Promise.resolve({}) },
    )
  const statuses = async () =>
    (await db.sql.query<{ id: string; status: string; reason: string | null }>(`SELECT d.id::text, coalesce(st.status, 'dead') AS status, st.status_reason AS reason FROM dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id ORDER BY d.id`)).rows
  const group = async () => (await db.sql.query<{ resolved_count: number; status: string }>('SELECT resolved_count::int, status FROM error_groups WHERE id = $1::bigint', [groupId])).rows[0]

  beforeAll(async () => {
    db = await createTestDb()
    operator = await createTestUser(db, 'restore-operator', [{ role: 'operator' }])
    viewer = await createTestUser(db, 'restore-viewer', [{ role: 'viewer' }])
    const sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('orders.dlq') RETURNING id::text`)).rows[0].id
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'orders.dlq', rows: [1, 2, 3, 4].map((n) => ingestRow({ signature: 'v1:restore', title: 'StockException: out of stock', body: Buffer.from(`{"n":${n}}`) })) })
    ids = (await statuses()).map((r) => r.id)
    groupId = (await db.sql.query<{ id: string }>('SELECT id::text FROM error_groups LIMIT 1')).rows[0].id
    const resolved = await post(resolveRoute.POST, { selection: { groupId }, reason: 'duplicates of an order we cancelled' }, operator)
    expect(await resolved.json()).toMatchObject({ resolved: 4 })
    expect(await group()).toEqual({ resolved_count: 4, status: 'resolved' })
  })
  afterAll(async () => db?.drop())

  it('a viewer may not restore; an operator restores one message with a reason, audited', async () => {
    expect((await post(restoreRoute.POST, { selection: { ids: [ids[0]] }, reason: 'was not a duplicate' }, viewer)).status).toBe(403)
    expect((await post(restoreRoute.POST, { selection: { ids: [ids[0]] }, reason: '  ' }, operator)).status).toBe(400)
    const response = await post(restoreRoute.POST, { selection: { ids: [ids[0]] }, reason: 'was not a duplicate' }, operator)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ restored: 1, skipped: 0, skippedReasons: [] })
    expect((await statuses())[0]).toEqual({ id: ids[0], status: 'dead', reason: 'was not a duplicate' })
    expect((await group()).resolved_count).toBe(3)
    const { rows } = await db.sql.query<{ actor: string; subject_id: string; details: { reason: string; restored: number } }>(`SELECT actor, subject_id, details FROM audit_log WHERE action = 'messages.restored'`)
    expect(rows).toEqual([{ actor: operator.actor, subject_id: ids[0], details: expect.objectContaining({ reason: 'was not a duplicate', restored: 1 }) }])
  })

  it("a whole group's resolved messages come back, the group reopens, and dead ones are skipped", async () => {
    const response = await post(restoreRoute.POST, { selection: { groupId }, reason: 'the cancellation was wrong' }, operator)
    expect(await response.json()).toEqual({ restored: 3, skipped: 1, skippedReasons: [{ reason: 'already dead', count: 1 }] })
    expect((await statuses()).map((s) => s.status)).toEqual(['dead', 'dead', 'dead', 'dead'])
    expect(await group()).toEqual({ resolved_count: 0, status: 'open' })
  })

  it('retention no longer deletes a restored message, however long ago it was resolved', async () => {
    await db.sql.query(`UPDATE dead_letter_states SET status_changed_at = now() - interval '90 days'`)
    const result = await runRetention({ db, days: 30 })
    expect(result.deleted).toBe(0)
    expect(await statuses()).toHaveLength(4)
  })

  it('restores and resolves racing over the same messages all answer, and the group counts what is resolved', async () => {
    const sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('race.dlq') RETURNING id::text`)).rows[0].id
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'race.dlq', rows: Array.from({ length: 60 }, (_, n) => ingestRow({ signature: 'v1:race', title: 'RaceException: both at once', body: Buffer.from(`{"n":${n}}`) })) })
    const race = (await db.sql.query<{ id: string }>(`SELECT id::text FROM error_groups WHERE signature = 'v1:race'`)).rows[0].id
    const raceIds = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE group_id = $1::bigint ORDER BY id', [race])).rows.map((r) => r.id)
    // Every other message resolved, so each statement finds rows to take and rows the other one takes.
    expect((await post(resolveRoute.POST, { selection: { ids: raceIds.filter((_, i) => i % 2 === 0) }, reason: 'half' }, operator)).status).toBe(200)
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all([
        post(restoreRoute.POST, { selection: { groupId: race }, reason: `restore ${round}` }, operator),
        post(resolveRoute.POST, { selection: { groupId: race }, reason: `resolve ${round}` }, operator),
        post(restoreRoute.POST, { selection: { ids: [...raceIds].reverse() }, reason: `restore back ${round}` }, operator),
        post(resolveRoute.POST, { selection: { ids: [...raceIds].reverse() }, reason: `resolve back ${round}` }, operator),
      ])
      expect(answers.map((a) => a.status), `round ${round}: ${await Promise.all(answers.filter((a) => a.status !== 200).map((a) => a.text()))}`).toEqual([200, 200, 200, 200])
      const { rows } = await db.sql.query<{ counted: number; resolved: number }>(
        `SELECT g.resolved_count::int AS counted, (SELECT count(*)::int FROM dead_letter_states st JOIN dead_letters d ON d.id = st.dead_letter_id WHERE d.group_id = g.id AND st.status = 'resolved') AS resolved
           FROM error_groups g WHERE g.id = $1::bigint`,
        [race],
      )
      expect(rows[0].counted, `round ${round}`).toBe(rows[0].resolved)
    }
  })
})
