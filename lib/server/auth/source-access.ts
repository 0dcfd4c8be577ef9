import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { sourcePatternMatches } from '@/lib/shared/roles'

/**
 * Source ids whose queue matches one of `patterns`; null stays null (every source). Sources are few (tens), so
 * matching in JavaScript after one read is simpler than translating patterns to SQL.
 */
export async function sourceIdsForPatterns({ sql, patterns }: { sql: Sql; patterns: string[] | null }): Promise<string[] | null> {
  if (patterns === null) return null
  if (patterns.length === 0) return []
  const { rows } = await sql.query<{ id: string; queue: string }>('SELECT id::text, queue FROM sources ORDER BY id', [], { name: 'auth_sources' })
  return rows.filter((r) => patterns.some((p) => sourcePatternMatches(p, r.queue))).map((r) => r.id)
}
