import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { getGroupTitle } from '@/lib/server/groups/get-group-title'
import { getMessageTitle } from '@/lib/server/messages/get-message-title'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'

/*
 * Browser tab titles of a group and a message name the object (issue 16, defect 13): the error's short name and, for
 * a message, its group; a caller scoped away from the source learns nothing but the number it asked for.
 */
describe('page titles', () => {
  let db: TestDb
  let sourceId: string
  let otherSourceId: string
  let messageId: string
  let groupId: string

  beforeAll(async () => {
    db = await createTestDb()
    const insert = async (queue: string) => (await db.sql.query<{ id: string }>('INSERT INTO sources (queue) VALUES ($1) RETURNING id::text', [queue])).rows[0].id
    sourceId = await insert('titles.dlq')
    otherSourceId = await insert('titles.other.dlq')
    await storeBatch({
      sql: db.sql,
      sourceId,
      sourceLabel: 'titles.dlq',
      rows: [ingestRow({ errorType: 'System.InvalidOperationException', signature: 'v1:titles-1', title: 'InvalidOperationException: Sequence contains no elements' })],
    })
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'titles.dlq', rows: [ingestRow({ errorType: null, signature: 'v1:titles-2', title: 'x'.repeat(80) })] })
    const { rows } = await db.sql.query<{ id: string; group_id: string }>('SELECT id::text, group_id::text FROM dead_letters ORDER BY id')
    messageId = rows[0].id
    groupId = rows[0].group_id
  })

  afterAll(async () => {
    await db?.drop()
  })

  it('names the error and, for a message, its group', async () => {
    expect(await getGroupTitle({ db, id: groupId })).toBe(`#${groupId} · InvalidOperationException`)
    expect(await getMessageTitle({ db, id: messageId })).toBe(`Message #${messageId} · InvalidOperationException · #${groupId}`)
  })

  it('falls back to the group title, cut at 60 characters, when there is no error type', async () => {
    const { rows } = await db.sql.query<{ id: string; group_id: string }>('SELECT id::text, group_id::text FROM dead_letters ORDER BY id DESC LIMIT 1')
    expect(await getMessageTitle({ db, id: rows[0].id })).toBe(`Message #${rows[0].id} · ${'x'.repeat(59)}… · #${rows[0].group_id}`)
  })

  it('says only the number to a caller scoped to another source, and for an unknown id; malformed ids get the page name', async () => {
    expect(await getMessageTitle({ db, id: messageId, sourceIds: [otherSourceId] })).toBe(`Message #${messageId}`)
    expect(await getGroupTitle({ db, id: groupId, sourceIds: [otherSourceId] })).toBe(`#${groupId}`)
    expect(await getMessageTitle({ db, id: '987654321' })).toBe('Message #987654321')
    expect(await getMessageTitle({ db, id: 'abc' })).toBe('Message')
    expect(await getMessageTitle({ db, id: messageId, sourceIds: [sourceId] })).toContain('InvalidOperationException')
  })
})
