import 'server-only'
import type { z } from 'zod'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { addGroupCounts } from '@/lib/server/groups/groups-store'
import type { Db } from '@/lib/server/platform/db'
import { MESSAGES_FROM, STATUS_SQL } from '@/lib/server/selection/message-filter-sql'
import { describeSelection, selectionSql, selectionSubject } from '@/lib/server/selection/selection-sql'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { resolveSchema, RestoreResultDto } from '@/lib/shared/schemas/replay'

// The same input as resolving: a selection and the reason.
export type RestoreMessagesOptions = { db: Db; input: z.infer<typeof resolveSchema>; actor: string } & SourceScope

/**
 * POST /api/messages/restore: resolved messages of the selection become dead again, with the operator's reason, so they
 * can be replayed or resolved anew; others are skipped and counted by their status. A dead message is never deleted
 * by retention (docs/ARCHITECTURE.md#retention), so restoring stops its clock. Restoring a whole group reopens the
 * group if it was marked resolved. Audited as 'messages.restored'; the reason it was resolved stays in the audit log.
 */
export async function restoreMessages({ db: { sql }, input, actor, ...scope }: RestoreMessagesOptions): Promise<RestoreResultDto> {
  const sourceIds = allowedSourceIds(scope)
  return sql.transaction(async (tx) => {
    const params: unknown[] = []
    // A caller limited to some sources restores only their messages, and never reopens a group spanning others.
    const { where } = selectionSql({ selection: input.selection, params, sourceIds })
    const { rows: skipped } = await tx.query<{ status: string; n: number }>(
      `SELECT ${STATUS_SQL} AS status, count(*)::int AS n FROM ${MESSAGES_FROM} WHERE ${where} AND ${STATUS_SQL} <> 'resolved' GROUP BY 1 ORDER BY 2 DESC`,
      params,
    )
    params.push(input.reason, actor)
    // The status rows are locked first, in the order every statement that takes them uses (STATUS_LOCK_ORDER), so a
    // restore racing a resolve or a replay over the same messages queues behind it instead of deadlocking. Each row is
    // re-checked under its lock, so a message a concurrent statement took meanwhile is skipped.
    const { rows: moved } = await tx.query<{ group_id: string; source_id: string; n: number }>(
      `WITH locked AS (
         SELECT st.dead_letter_id FROM dead_letter_states AS st
         WHERE st.dead_letter_id IN (SELECT d.id FROM ${MESSAGES_FROM} WHERE ${where} AND ${STATUS_SQL} = 'resolved') AND st.status = 'resolved'
         ORDER BY st.dead_letter_id FOR UPDATE
       ), restored AS (
         UPDATE dead_letter_states AS st SET status = 'dead', status_reason = $${params.length - 1}, status_changed_at = now(), status_changed_by = $${params.length}
         FROM locked WHERE st.dead_letter_id = locked.dead_letter_id AND st.status = 'resolved'
         RETURNING st.dead_letter_id
       )
       SELECT d.group_id::text, d.source_id::text, count(*)::int AS n FROM restored r JOIN dead_letters d ON d.id = r.dead_letter_id GROUP BY 1, 2 ORDER BY 1, 2`,
      params,
    )
    await addGroupCounts({ sql: tx, column: 'resolved_count', moved: moved.map((m) => ({ ...m, n: -m.n })) })
    const restored = moved.reduce((sum, g) => sum + g.n, 0)
    if ('groupId' in input.selection && restored > 0 && !sourceIds) {
      await tx.query(`UPDATE error_groups SET status = 'open', updated_at = now() WHERE id = $1::bigint AND status = 'resolved'`, [input.selection.groupId])
    }
    const skippedCount = skipped.reduce((sum, s) => sum + s.n, 0)
    // Shaped like resolve's entry on purpose, so the audit log reads the two directions alike.
    await recordAudit({
      sql: tx,
      actor,
      action: 'messages.restored',
      subject: selectionSubject(input.selection),
      summary: `Restored ${restored} resolved message${restored === 1 ? '' : 's'} to dead (${describeSelection(input.selection)}): ${input.reason.slice(0, 200)}`,
      details: { selection: input.selection, reason: input.reason, restored, skipped: skippedCount, groups: [...new Set(moved.map((g) => g.group_id))] },
      outcome: restored > 0 ? 'restored' : 'nothing to restore',
    })
    return { restored, skipped: skippedCount, skippedReasons: skipped.map((s) => ({ reason: s.status === 'dead' ? 'already dead' : s.status, count: s.n })) }
  })
}
