import 'server-only'
import type { z } from 'zod'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import { MESSAGES_FROM, STATUS_LOCK_ORDER, STATUS_SQL } from '@/lib/server/selection/message-filter-sql'
import { addGroupCounts } from '@/lib/server/groups/groups-store'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { describeSelection, selectionSql, selectionSubject } from '@/lib/server/selection/selection-sql'
import type { ResolveResultDto, resolveSchema } from '@/lib/shared/schemas/replay'

export type ResolveMessagesOptions = { db: Db; input: z.infer<typeof resolveSchema>; actor: string } & SourceScope

/**
 * POST /api/messages/resolve: dead messages of the selection become 'resolved' with the operator's reason (never
 * replayed afterwards); others are skipped and counted by their status. Resolving a whole group also marks the group
 * resolved (it reopens when new failures arrive). Audited as 'messages.resolved'.
 */
export async function resolveMessages({ db: { sql }, input, actor, ...scope }: ResolveMessagesOptions): Promise<ResolveResultDto> {
  const sourceIds = allowedSourceIds(scope)
  const result = await sql.transaction(async (tx) => {
    const params: unknown[] = []
    // A caller limited to some sources resolves only their messages, and never marks a group spanning others resolved.
    const { where } = selectionSql({ selection: input.selection, params, sourceIds })
    const { rows: skipped } = await tx.query<{ status: string; n: number }>(
      `SELECT st.status, count(*)::int AS n FROM ${MESSAGES_FROM} WHERE ${where} AND st.status <> 'dead' GROUP BY 1 ORDER BY 2 DESC`,
      params,
    )
    params.push(input.reason, actor)
    const { rows: moved } = await tx.query<{ group_id: string; source_id: string; n: number }>(
      // A dead message has no status row, or one that says dead: the upsert writes or takes it, and its re-check under
      // the row lock (or the unique key) skips a message a concurrent replay or resolve took meanwhile.
      // The groups and sources are read back through the primary key: a join of two CTEs (no statistics) can become a
      // nested loop.
      `WITH resolved AS (
         INSERT INTO dead_letter_states AS st (dead_letter_id, status, status_reason, status_changed_at, status_changed_by, failed_at)
         SELECT d.id, 'resolved', $${params.length - 1}, now(), $${params.length}, d.failed_at FROM ${MESSAGES_FROM} WHERE ${where} AND ${STATUS_SQL} = 'dead'
         ${STATUS_LOCK_ORDER}
         ON CONFLICT (dead_letter_id) DO UPDATE SET status = 'resolved', status_reason = excluded.status_reason,
           status_changed_at = excluded.status_changed_at, status_changed_by = excluded.status_changed_by
         WHERE st.status = 'dead'
         RETURNING st.dead_letter_id
       )
       SELECT d.group_id::text, d.source_id::text, count(*)::int AS n FROM resolved r JOIN dead_letters d ON d.id = r.dead_letter_id GROUP BY 1, 2 ORDER BY 1, 2`,
      params,
    )
    await addGroupCounts({ sql: tx, column: 'resolved_count', moved })
    const resolved = moved.reduce((sum, g) => sum + g.n, 0)
    if ('groupId' in input.selection && resolved > 0 && !sourceIds) {
      await tx.query(`UPDATE error_groups SET status = 'resolved', updated_at = now() WHERE id = $1::bigint`, [input.selection.groupId])
    }
    const skippedCount = skipped.reduce((sum, s) => sum + s.n, 0)
    await recordAudit({
      sql: tx,
      actor,
      action: 'messages.resolved',
      subject: selectionSubject(input.selection),
      summary: `Resolved ${resolved} message${resolved === 1 ? '' : 's'} (${describeSelection(input.selection)}): ${input.reason.slice(0, 200)}`,
      details: { selection: input.selection, reason: input.reason, resolved, skipped: skippedCount, groups: [...new Set(moved.map((g) => g.group_id))] },
      outcome: resolved > 0 ? 'resolved' : 'nothing to resolve',
    })
    return { resolved, skipped: skippedCount, skippedReasons: skipped.map((s) => ({ reason: s.status === 'resolved' ? 'already resolved' : s.status, count: s.n })) }
  })
  return result
}
