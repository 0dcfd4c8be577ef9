import 'server-only'
import type { FindingDto } from '@/lib/shared/schemas/topology'
import type { FindingRow } from './findings-store'

export function toFindingDto(row: FindingRow): FindingDto {
  return {
    id: row.id,
    kind: row.kind,
    severity: row.severity,
    vhost: row.vhost,
    ...row.detail,
    firstSeenAt: new Date(row.first_seen_at).toISOString(),
    lastSeenAt: new Date(row.last_seen_at).toISOString(),
    resolvedAt: row.resolved_at ? new Date(row.resolved_at).toISOString() : null,
    acknowledged:
      row.acknowledged_at && row.acknowledged_by && row.acknowledge_reason !== null
        ? { by: row.acknowledged_by, at: new Date(row.acknowledged_at).toISOString(), reason: row.acknowledge_reason }
        : null,
  }
}
