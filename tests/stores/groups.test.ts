import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addGroupCounts, groupHasMessagesIn, lockGroupTriage, setGroupTriage } from '@/lib/server/groups/groups-store'
import { lockRedactionRules, readRedactionRules, replaceRedactionRules } from '@/lib/server/redaction/redaction-store'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { insertSource, storeRows } from '../helpers/store-seed'

/**
 * A group's triage state and status counters (lib/server/groups/groups-store.ts), and the redaction rules
 * (lib/server/redaction/redaction-store.ts), on either engine.
 */
let db: EngineDb
beforeAll(async () => {
  db = await createEngineDb()
})
afterAll(async () => db?.drop())

const groupOf = async (signature: string) => (await db.sql.query<{ id: string }>('SELECT id::text FROM error_groups WHERE signature = $1', [signature])).rows[0].id

describe('groups', () => {
  it('know which sources hold their messages', async () => {
    const [a, b, c] = [await insertSource(db.sql), await insertSource(db.sql), await insertSource(db.sql)]
    await storeRows(db.sql, a, [{ signature: 'v1:where' }])
    await storeRows(db.sql, b, [{ signature: 'v1:where' }])
    const id = await groupOf('v1:where')
    expect(await groupHasMessagesIn({ sql: db.sql, groupId: id, sourceIds: [c] })).toBe(false)
    expect(await groupHasMessagesIn({ sql: db.sql, groupId: id, sourceIds: [c, b] })).toBe(true)
  })

  it('are triaged under a row lock: status, note and ticket written together', async () => {
    await storeRows(db.sql, await insertSource(db.sql), [{ signature: 'v1:triage', title: 'Timeout' }])
    const id = await groupOf('v1:triage')
    await db.sql.transaction(async (tx) => {
      const before = await lockGroupTriage({ sql: tx, groupId: id })
      expect(before).toEqual({ status: 'open', note: null, ticket_url: null, title: 'Timeout' })
      await setGroupTriage({ sql: tx, groupId: id, triage: { ...before!, status: 'acknowledged', note: 'on it', ticket_url: 'https://tickets.example/1' } })
    })
    expect(await lockGroupTriage({ sql: db.sql, groupId: id })).toEqual({ status: 'acknowledged', note: 'on it', ticket_url: 'https://tickets.example/1', title: 'Timeout' })
    expect(await lockGroupTriage({ sql: db.sql, groupId: '999999' })).toBeUndefined()
  })

  it('move their replayed and resolved counters per group and per source together', async () => {
    const [a, b] = [await insertSource(db.sql), await insertSource(db.sql)]
    await storeRows(db.sql, a, [{ signature: 'v1:counted' }, { signature: 'v1:counted' }])
    await storeRows(db.sql, b, [{ signature: 'v1:counted' }])
    const id = await groupOf('v1:counted')
    await db.sql.transaction((tx) => addGroupCounts({ sql: tx, column: 'resolved_count', moved: [{ group_id: id, source_id: a, n: 2 }, { group_id: id, source_id: b, n: 1 }] }))
    await db.sql.transaction((tx) => addGroupCounts({ sql: tx, column: 'replayed_count', moved: [{ group_id: id, source_id: b, n: 1 }] }))
    await addGroupCounts({ sql: db.sql, column: 'replayed_count', moved: [] })
    const { rows: group } = await db.sql.query('SELECT count::int, resolved_count::int, replayed_count::int FROM error_groups WHERE id = $1::bigint', [id])
    expect(group).toEqual([{ count: 3, resolved_count: 3, replayed_count: 1 }])
    const { rows: perSource } = await db.sql.query<{ source_id: string }>(
      'SELECT source_id::text, count::int, resolved_count::int, replayed_count::int FROM group_source_stats WHERE group_id = $1::bigint ORDER BY source_id', [id],
    )
    expect(perSource).toEqual([
      { source_id: a, count: 2, resolved_count: 2, replayed_count: 0 },
      { source_id: b, count: 1, resolved_count: 1, replayed_count: 1 },
    ])
  })
})

describe('redaction rules', () => {
  it('are replaced as a whole, in their order, under the table lock', async () => {
    // The migration's defaults first.
    expect((await readRedactionRules({ sql: db.sql })).map((r) => r.value)).toContain('authorization')
    const replace = (rules: Parameters<typeof replaceRedactionRules>[0]['rules'], actor: string) =>
      db.sql.transaction(async (tx) => {
        await lockRedactionRules({ sql: tx })
        await replaceRedactionRules({ sql: tx, rules, actor })
      })
    await replace([{ kind: 'key', value: 'authorization', enabled: true, description: 'tokens' }, { kind: 'pattern', value: 'card-[0-9]+', enabled: false }], 'admin')
    await replace([{ kind: 'detector', value: 'iban', enabled: true }, { kind: 'key', value: 'authorization', enabled: true, description: '' }], 'other')
    const rules = await readRedactionRules({ sql: db.sql })
    expect(rules.map((r) => [r.kind, r.value, r.enabled, r.description, r.updated_by])).toEqual([
      ['detector', 'iban', true, null, 'other'],
      ['key', 'authorization', true, null, 'other'],
    ])
    await replace([], 'admin')
    expect(await readRedactionRules({ sql: db.sql })).toEqual([])
  })
})
