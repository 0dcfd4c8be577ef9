import { describe, expect, it } from 'vitest'
import { messageFilterSql } from '@/lib/server/selection/message-filter-sql'
import { describeSelection, SEARCH_JOIN, selectionFilter, selectionSql, type SelectionSqlOptions } from '@/lib/server/selection/selection-sql'
import { selectionSchema, type Selection } from '@/lib/shared/schemas/selection'

/**
 * The SQL a replay plan, a resolve, an export and a ticket run for each kind of selection, pinned: these clauses decide
 * which messages an operator's action touches (and, with the source scope, which ones a restricted caller may touch),
 * and their shape decides the plans of the hot statements (docs/ARCHITECTURE.md#replay).
 */
function sqlOf(selection: Selection, options: Omit<SelectionSqlOptions, 'selection' | 'params'> & { params?: unknown[] } = {}) {
  const params = options.params ?? []
  const { where, searchJoin } = selectionSql({ ...options, selection, params })
  return { where: where.replace(/\s+/g, ' '), searchJoin, params }
}

const SEARCH_TEXT = 'coalesce(ds.text, dead_letter_search_text_v2(d.error_type, d.error_message, d.entity_key, d.body_preview))'
const indexedSearch = (p: string) =>
  `d.id IN (SELECT dead_letter_id FROM dead_letter_search WHERE text ILIKE ${p} UNION ALL SELECT backlog_d.id FROM search_backlog backlog ` +
  `JOIN dead_letters backlog_d ON backlog_d.id BETWEEN backlog.first_id AND backlog.last_id ` +
  `WHERE dead_letter_search_text_v2(backlog_d.error_type, backlog_d.error_message, backlog_d.entity_key, backlog_d.body_preview) ILIKE ${p})`

describe('selectionSql: ids', () => {
  const selection = { ids: ['7', '9'] }

  it('selects those messages', () => {
    expect(sqlOf(selection)).toEqual({ where: 'd.id = ANY($1::bigint[])', searchJoin: '', params: [['7', '9']] })
  })

  it("keeps only the caller's sources", () => {
    expect(sqlOf(selection, { sourceIds: ['3', '4'] })).toEqual({
      where: 'd.id = ANY($1::bigint[]) AND d.source_id = ANY($2::bigint[])',
      searchJoin: '',
      params: [['7', '9'], ['3', '4']],
    })
  })

  it('numbers its parameters after the statement’s own', () => {
    expect(sqlOf(selection, { params: ['x', 'y'], sourceIds: ['3'] })).toEqual({
      where: 'd.id = ANY($3::bigint[]) AND d.source_id = ANY($4::bigint[])',
      searchJoin: '',
      params: ['x', 'y', ['7', '9'], ['3']],
    })
  })

  it('needs no search join, whatever the text search', () => {
    expect(sqlOf(selection, { textSearch: 'per-row' }).searchJoin).toBe('')
  })
})

describe('selectionSql: a group', () => {
  it('is the filter group', () => {
    expect(sqlOf({ groupId: '12' })).toEqual({ where: 'd.group_id = $1::bigint', searchJoin: '', params: ['12'] })
  })

  it("keeps only the caller's sources", () => {
    expect(sqlOf({ groupId: '12' }, { sourceIds: ['3'] })).toEqual({
      where: 'd.group_id = $1::bigint AND d.source_id = ANY($2::bigint[])',
      searchJoin: '',
      params: ['12', ['3']],
    })
  })
})

describe('selectionSql: a filter', () => {
  const every = selectionSchema.parse({
    filter: {
      group: '12', source: '5', status: 'replayed', failureKind: 'transient', service: 'billing', serviceVersion: '2.1.0',
      entity: 'order-1', from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z',
    },
  })

  it('is every condition of the message list, the source scope after the group and source', () => {
    const { where, searchJoin, params } = sqlOf(every, { sourceIds: ['5', '6'] })
    expect(where).toBe(
      'd.group_id = $1::bigint AND d.source_id = $2::bigint AND d.source_id = ANY($3::bigint[]) AND st.status = $4 AND st.status <> \'dead\'' +
        ' AND d.failure_kind = $5 AND d.service = $6 AND d.service_version = $7 AND d.entity_key = $8' +
        ' AND d.failed_at >= $9::timestamptz AND d.failed_at < $10::timestamptz',
    )
    expect(searchJoin).toBe('')
    expect(params).toEqual(['12', '5', ['5', '6'], 'replayed', 'transient', 'billing', '2.1.0', 'order-1', new Date('2026-11-30T00:00:00Z'), new Date('2026-12-01T00:00:00Z')])
  })

  it("is exactly the message list's condition, so it selects what the list showed and counted", () => {
    if (!('filter' in every)) throw new Error('a filter selection')
    const listParams: unknown[] = []
    expect(sqlOf(every, { sourceIds: ['5'] })).toEqual({ where: messageFilterSql(every.filter, listParams, ['5']), searchJoin: '', params: listParams })
  })

  it('spells dead as the missing status row', () => {
    expect(sqlOf({ filter: { status: 'dead' } })).toEqual({ where: "coalesce(st.status, 'dead') = 'dead'", searchJoin: '', params: [] })
  })

  it('without conditions is every message, or every message of the allowed sources (none for an empty list)', () => {
    expect(sqlOf({ filter: {} })).toEqual({ where: 'TRUE', searchJoin: '', params: [] })
    expect(sqlOf({ filter: {} }, { sourceIds: ['3'] })).toEqual({ where: 'd.source_id = ANY($1::bigint[])', searchJoin: '', params: [['3']] })
    expect(sqlOf({ filter: {} }, { sourceIds: [] })).toEqual({ where: 'd.source_id = ANY($1::bigint[])', searchJoin: '', params: [[]] })
  })

  it('matches a text search through the search index by default (replay plan, resolve)', () => {
    expect(sqlOf({ filter: { service: 'billing', q: '50%_off' } }, { sourceIds: ['3'] })).toEqual({
      where: `d.source_id = ANY($1::bigint[]) AND d.service = $2 AND ${indexedSearch('$3')}`,
      searchJoin: '',
      params: [['3'], 'billing', '%50\\%\\_off%'],
    })
  })

  it('matches a text search row by row along the walk when asked (export, ticket), with the search rows joined', () => {
    expect(sqlOf({ filter: { status: 'held', q: 'timeout' } }, { sourceIds: ['3'], textSearch: 'per-row' })).toEqual({
      where: `d.source_id = ANY($1::bigint[]) AND st.status = $2 AND st.status <> 'dead' AND ${SEARCH_TEXT} ILIKE $3`,
      searchJoin: 'LEFT JOIN dead_letter_search ds ON ds.dead_letter_id = d.id',
      params: [['3'], 'held', '%timeout%'],
    })
    expect(SEARCH_JOIN).toBe('LEFT JOIN dead_letter_search ds ON ds.dead_letter_id = d.id')
  })

  it('joins the search rows only for a text search', () => {
    expect(sqlOf({ filter: { service: 'billing' } }, { textSearch: 'per-row' })).toEqual({ where: 'd.service = $1', searchJoin: '', params: ['billing'] })
  })
})

describe('selectionSql: the source scope', () => {
  it('refuses a source id that is not one (it comes from the grants, never from the request)', () => {
    expect(() => sqlOf({ ids: ['1'] }, { sourceIds: ['1; DROP TABLE sources'] })).toThrow(/is not a source id/)
    expect(() => sqlOf({ groupId: '1' }, { sourceIds: ['0'] })).toThrow(/is not a source id/)
  })

  it('adds nothing when absent or null', () => {
    expect(sqlOf({ groupId: '1' }, { sourceIds: null })).toEqual(sqlOf({ groupId: '1' }))
  })
})

describe('selectionFilter', () => {
  it('is the filter a selection is listed and paged by', () => {
    expect(selectionFilter({ ids: ['1'] })).toEqual({})
    expect(selectionFilter({ groupId: '12' })).toEqual({ group: '12' })
    expect(selectionFilter({ filter: { status: 'resolved', service: 'billing' } })).toEqual({ status: 'resolved', service: 'billing' })
  })
})

describe('describeSelection', () => {
  it('names the selection in an audit summary', () => {
    expect(describeSelection({ ids: ['1'] })).toBe('message 1')
    expect(describeSelection({ ids: ['1', '2'] })).toBe('2 selected messages')
    expect(describeSelection({ groupId: '12' })).toBe('group 12')
    expect(describeSelection({ filter: {} })).toBe('all messages')
    expect(describeSelection(selectionSchema.parse({ filter: { service: 'billing', from: '2026-11-30' } }))).toBe(
      'messages matching service=billing, from=2026-11-30T00:00:00.000Z',
    )
  })
})
