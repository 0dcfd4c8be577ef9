import { describe, expect, it } from 'vitest'
import { exportUrl } from '@/lib/client/export-url'
import { exportQuerySchema } from '@/lib/shared/schemas/export'

const query = (url: string) => Object.fromEntries(new URL(url, 'http://x').searchParams)

describe('export download URLs', () => {
  it('name ids, a group, or the page filters, and always pass the API schema', () => {
    const now = Date.now()
    const cases = [
      { selection: { ids: ['3', '1'] }, expected: { format: 'csv', ids: '3,1' } },
      { selection: { groupId: '12' }, expected: { format: 'csv', group: '12' } },
      { selection: { filter: { group: '12', service: 'orders', limit: '50', sort: 'count', q: '' } }, expected: { format: 'csv', group: '12', service: 'orders' } },
    ]
    for (const { selection, expected } of cases) {
      const url = exportUrl('csv', selection)
      expect(query(url)).toEqual(expected)
      expect(exportQuerySchema.safeParse(query(url)).success).toBe(true)
    }
    // A relative range becomes an absolute `from` when the link is made.
    const ranged = query(exportUrl('jsonl', { filter: { range: '24h', status: 'dead' } }))
    expect(ranged.range).toBeUndefined()
    expect(Math.abs(Date.parse(ranged.from) - (now - 24 * 3_600_000))).toBeLessThan(120_000)
    expect(exportQuerySchema.safeParse(ranged).success).toBe(true)
  })
})
