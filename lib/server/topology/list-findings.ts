import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { FindingDto } from '@/lib/shared/schemas/topology'
import { toFindingDto } from './finding-dto'
import { selectFindings } from './findings-store'

export type ListFindingsOptions = { db: Db; vhost?: string; state: 'open' | 'all' }

/** GET /api/topology/findings: every vhost's findings (or one's), worst and newest first. */
export async function listFindings({ db, vhost, state }: ListFindingsOptions): Promise<{ findings: FindingDto[] }> {
  const rows = await selectFindings({ sql: db.sql, vhost, includeResolved: state === 'all' })
  return { findings: rows.map(toFindingDto) }
}
