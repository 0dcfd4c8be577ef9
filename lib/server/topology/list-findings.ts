import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { FindingDto } from '@/lib/shared/schemas/topology'
import { toFindingDto } from './finding-dto'
import { selectFindings } from './findings-store'
import { JETSTREAM_SCOPE } from './jetstream/rules/jetstream-kit'

export type ListFindingsOptions = { db: Db; vhost?: string; broker?: 'jetstream'; state: 'open' | 'all' }

/** GET /api/topology/findings: every vhost's findings (or one's, or JetStream's), worst and newest first. */
export async function listFindings({ db, vhost, broker, state }: ListFindingsOptions): Promise<{ findings: FindingDto[] }> {
  const rows = await selectFindings({ sql: db.sql, vhost: broker === 'jetstream' ? JETSTREAM_SCOPE : vhost, includeResolved: state === 'all' })
  return { findings: rows.map(toFindingDto) }
}
