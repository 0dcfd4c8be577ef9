import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  insertRevisions, listRevisionRows, loadEditBase, loadEditBases, lockMessageEdits, openReplayRevisions, selectFrozenRevisions, type NewRevision,
} from '@/lib/server/messages/revisions-store'
import type { TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { insertSource, replayJobOf, storeRows } from '../helpers/store-seed'

/**
 * Message revisions (lib/server/messages/revisions-store.ts, docs/ARCHITECTURE.md#revisions) on either engine: each
 * edit numbered after the newest, bodies byte for byte (they travel as hex: a bytea[] parameter is read differently by
 * node-pg and PGlite), and a job freezes the revision it will send.
 */
let db: EngineDb
let sourceId: string
beforeAll(async () => {
  db = await createEngineDb()
  sourceId = await insertSource(db.sql)
})
afterAll(async () => db?.drop())

const HEADERS: TypedTable = { tenant: { t: 'S', v: 'acme' } }
const edit = (id: string, body: Buffer, actor = 'ops'): NewRevision => ({
  id, actor, bulkId: null, bodyEncoding: 'binary', summary: `edited by ${actor}`,
  content: { body, headers: HEADERS, properties: { contentType: 'application/octet-stream' } },
  diff: { body: { kind: 'binary', beforeSize: 0, afterSize: body.length, beforeSha256: '', afterSha256: '' }, headers: [], properties: [] },
})

describe('revisions', () => {
  it('start from the stored message, are numbered after the newest, and keep their bytes', async () => {
    const [id, other] = await storeRows(db.sql, sourceId, [{ body: Buffer.from('{"n":1}'), headersJson: '{"x":{"t":"S","v":"1"}}' }, {}])
    const base = await loadEditBase({ sql: db.sql, id, sourceIds: null })
    expect(base).toEqual({ id, sourceId, revision: 0, content: { body: Buffer.from('{"n":1}'), properties: {}, headers: { x: { t: 'S', v: '1' } } } })
    expect(await loadEditBase({ sql: db.sql, id, sourceIds: ['0'] })).toBeNull()

    const bytes = Buffer.from([0, 255, 10, 13, 0x80])
    const first = await db.sql.transaction(async (tx) => {
      await lockMessageEdits({ sql: tx, id })
      return insertRevisions({ sql: tx, revisions: [edit(id, bytes), edit(other, Buffer.from('x'))] })
    })
    expect(first.map((r) => [r.revision, r.bodySize, r.createdBy])).toEqual([[1, 5, 'ops'], [1, 1, 'ops']])
    await insertRevisions({ sql: db.sql, revisions: [edit(id, Buffer.from('second'), 'ann')] })
    expect(await insertRevisions({ sql: db.sql, revisions: [] })).toEqual([])

    const newest = await loadEditBase({ sql: db.sql, id, sourceIds: [sourceId] })
    expect(newest).toMatchObject({ revision: 2, content: { body: Buffer.from('second'), headers: HEADERS, properties: { contentType: 'application/octet-stream' } } })
    expect((await loadEditBases({ sql: db.sql, ids: [other, id] })).map((b) => [b.id, b.revision])).toEqual([[id, 2], [other, 1]])
    const listed = await listRevisionRows({ sql: db.sql, id, limit: 10 })
    expect(listed.map((r) => [r.revision, r.createdBy, r.summary])).toEqual([[2, 'ann', 'edited by ann'], [1, 'ops', 'edited by ops']])
    expect(listed[1].diff).toEqual(edit(id, bytes).diff)
    expect((await listRevisionRows({ sql: db.sql, id, limit: 1 })).map((r) => r.revision)).toEqual([2])
  })

  it('are frozen into a job at its newest, shown beside the original, and an open item names the one it will send', async () => {
    const [edited, plain] = await storeRows(db.sql, sourceId, [{ body: Buffer.from('original') }, { body: Buffer.from('untouched') }])
    await insertRevisions({ sql: db.sql, revisions: [edit(edited, Buffer.from('fixed'))] })
    const { jobId } = await replayJobOf(db.sql, [edited, plain])
    expect(await openReplayRevisions({ sql: db.sql, id: edited })).toEqual([{ jobId, revision: 1 }])
    expect(await openReplayRevisions({ sql: db.sql, id: plain })).toEqual([{ jobId, revision: null }])
    // An edit after the job was created goes out with a later replay, not with this one.
    await insertRevisions({ sql: db.sql, revisions: [edit(edited, Buffer.from('fixed again'))] })

    const frozen = await selectFrozenRevisions({ sql: db.sql, jobId, sourceIds: null, limit: 10 })
    expect(frozen.total).toBe(1)
    expect(frozen.rows).toEqual([expect.objectContaining({
      dead_letter_id: edited, item_status: 'pending', revision: 1, created_by: 'ops',
      original: expect.objectContaining({ body: Buffer.from('original') }), edited: expect.objectContaining({ body: Buffer.from('fixed'), headers: HEADERS }),
    })])
    expect(await selectFrozenRevisions({ sql: db.sql, jobId, sourceIds: ['0'], limit: 10 })).toEqual({ total: 0, rows: [] })
  })
})
