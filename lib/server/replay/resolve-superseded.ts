import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { addGroupCounts } from '@/lib/server/groups/groups-store'
import type { Sql } from '@/lib/server/platform/db/sql'
import { resolveSupersededMessages } from './replay-store'

export type ResolveSupersededOptions = { tx: Sql; jobId: string; ids: string[]; actor: string }

/**
 * The older versions "only the newest per entity" left out become resolved ("superseded by version V"), in the job's
 * transaction (a waiting job's when it starts: lib/server/engines/replay-executor/start-job.ts), with their groups' counters and an audit entry of their own (docs/ARCHITECTURE.md#entity-versions).
 */
export async function resolveSuperseded({ tx, jobId, ids, actor }: ResolveSupersededOptions): Promise<number> {
  if (ids.length === 0) return 0
  const moved = await resolveSupersededMessages({ sql: tx, jobId, ids, actor })
  await addGroupCounts({ sql: tx, column: 'resolved_count', moved })
  const resolved = moved.reduce((sum, g) => sum + g.n, 0)
  if (resolved > 0) {
    await recordAudit({
      sql: tx,
      actor,
      action: 'messages.superseded',
      subject: { type: 'replay', id: jobId },
      summary: `Resolved ${resolved} older version${resolved === 1 ? '' : 's'} as superseded by replay ${jobId} (only the newest per entity)`,
      details: { jobId, resolved, planned: ids.length, sampleIds: ids.slice(0, 20) },
      outcome: 'resolved',
    })
  }
  return resolved
}
