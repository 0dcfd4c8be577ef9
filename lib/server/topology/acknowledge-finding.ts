import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { FindingDto } from '@/lib/shared/schemas/topology'
import { toFindingDto } from './finding-dto'
import { selectFinding, setAcknowledged } from './findings-store'

export type AcknowledgeFindingOptions = { db: Db; id: string; reason: string; actor: string; now?: Date }

/**
 * Marks a finding as known and accepted, with the reason, and records who did it. The finding stays open (it is still
 * true) but leaves the metric and the page's count of what needs attention; if it is resolved and comes back later, it
 * opens as new, unacknowledged (docs/topology.md#findings).
 */
export async function acknowledgeFinding({ db, id, reason, actor, now = new Date() }: AcknowledgeFindingOptions): Promise<FindingDto> {
  const findingId = parseId(id, 'finding').toString()
  return db.sql.transaction(async (sql) => {
    const before = await selectFinding({ sql, id: findingId, forUpdate: true })
    if (!before) throw notFound(`finding ${id}`)
    if (before.resolved_at) throw new AppError('conflict', 'This finding is resolved: the last run no longer found it, so there is nothing to acknowledge.')
    const row = await setAcknowledged({ sql, id: findingId, by: actor, reason, now })
    await recordAudit({
      sql,
      actor,
      action: 'topology.finding-acknowledged',
      subject: { type: 'topology-finding', id: findingId },
      summary: `Acknowledged ${row.kind} on ${row.vhost}: ${row.detail.title}`,
      details: { vhost: row.vhost, kind: row.kind, severity: row.severity, reason, previously: before.acknowledged_by ? { by: before.acknowledged_by, reason: before.acknowledge_reason } : null },
    })
    return toFindingDto(row)
  })
}
