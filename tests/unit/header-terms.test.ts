import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { INDEXED_PROPERTIES, isIndexedEquality, messageFilterSql } from '@/lib/server/selection/message-filter-sql'
import { selectionSql } from '@/lib/server/selection/selection-sql'
import { FILTER_PROPERTIES, type FieldCondition } from '@/lib/shared/schemas/field-filter'

/**
 * Which conditions the header terms answer (docs/decisions/0013-header-terms-in-the-search-index.md), and that the
 * properties the filter looks up are exactly those the migration's terms function writes: a property looked up but
 * never written would make indexed messages vanish from the results.
 */
const MIGRATION = path.resolve(import.meta.dirname, '../../prisma/migrations/20261208000000_header_terms/migration.sql')

describe('header terms', () => {
  it('the terms function writes a term for every property the filter looks up, and only filterable ones', () => {
    const sql = readFileSync(MIGRATION, 'utf8')
    const listed = /unnest\(ARRAY\[([^\]]*)\]\) AS p\(name\)/.exec(sql)?.[1]
    expect(listed?.split(',').map((name) => name.trim().replace(/^'|'$/g, ''))).toEqual([...INDEXED_PROPERTIES])
    for (const name of INDEXED_PROPERTIES) expect(FILTER_PROPERTIES).toContain(name)
  })

  it('header and property equalities are looked up; prefix, exists and x-death are not', () => {
    const cases: [FieldCondition, boolean][] = [
      [{ on: 'header', name: 'tenant', op: 'eq', value: 'acme' }, true],
      [{ on: 'property', name: 'correlationId', op: 'eq', value: 'c-1' }, true],
      [{ on: 'header', name: 'tenant', op: 'prefix', value: 'ac' }, false],
      [{ on: 'header', name: 'tenant', op: 'exists' }, false],
      [{ on: 'property', name: 'type', op: 'missing' }, false],
      [{ on: 'death', name: 'reason', op: 'eq', value: 'expired' }, false],
      [{ on: 'death', name: 'count', op: 'gte', value: '3' }, false],
    ]
    for (const [condition, indexed] of cases) expect(isIndexedEquality(condition), JSON.stringify(condition)).toBe(indexed)
  })

  it('an equality takes the terms and still checks the stored value; per-row and exports check the stored value only', () => {
    const match: FieldCondition[] = [{ on: 'header', name: 'tenant', op: 'eq', value: 'acme' }]
    const params: unknown[] = []
    const where = messageFilterSql({ match }, params).replace(/\s+/g, ' ')
    expect(where).toContain('d.id IN (SELECT dead_letter_id FROM dead_letter_search WHERE terms @> ARRAY[dead_letter_term($1, $2, $3)] UNION ALL')
    expect(where).toContain("backlog_d.headers -> $4 ->> 'v' END) = $5")
    expect(where.endsWith("(CASE WHEN json_typeof(d.headers) = 'object' THEN d.headers -> $6 ->> 'v' END) = $7")).toBe(true)
    expect(params).toEqual(['h', 'tenant', 'acme', 'tenant', 'acme', 'tenant', 'acme'])
    const perRow = messageFilterSql({ match }, [], null, 'per-row')
    expect(perRow).not.toContain('dead_letter_search')
    const exported = selectionSql({ selection: { filter: { match } }, params: [], textSearch: 'per-row' })
    expect(exported.where).not.toContain('dead_letter_search')
  })
})
