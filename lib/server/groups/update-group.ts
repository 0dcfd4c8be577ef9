import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { getDb } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { GroupDto, UpdateGroupInput } from '@/lib/shared/schemas/group'
import { getGroup } from './get-group'

export type UpdateGroupOptions = { id: string; input: UpdateGroupInput; actor: string } & SourceScope

/**
 * Sets a group's triage state (status, note, ticket link) and audits the change. A resolved group reopens by itself
 * when new failures arrive (lib/server/engines/drainer/store-batch.ts); acknowledged and muted ones keep their state.
 * With `sourceIds`, a group none of those sources holds a message of is not found, and the group returned is as
 * those sources show it.
 */
export async function updateGroup({ id, input, actor, ...scope }: UpdateGroupOptions): Promise<GroupDto> {
  const { sql } = await getDb()
  const groupId = parseId(id, 'group').toString()
  const sourceIds = allowedSourceIds(scope)
  await sql.transaction(async (tx) => {
    if (sourceIds) {
      const { rows } = await tx.query('SELECT 1 FROM group_source_stats WHERE group_id = $1::bigint AND source_id = ANY($2::bigint[]) AND count > 0 LIMIT 1', [groupId, sourceIds])
      if (rows.length === 0) throw notFound(`group ${id}`)
    }
    const { rows } = await tx.query<{ status: string; note: string | null; ticket_url: string | null; title: string }>(
      'SELECT status, note, ticket_url, title FROM error_groups WHERE id = $1::bigint FOR UPDATE',
      [groupId],
    )
    const before = rows[0]
    if (!before) throw notFound(`group ${id}`)
    const after = {
      status: input.status ?? before.status,
      note: input.note === undefined ? before.note : input.note?.trim() || null,
      ticket_url: input.ticketUrl === undefined ? before.ticket_url : input.ticketUrl,
    }
    await tx.query('UPDATE error_groups SET status = $2, note = $3, ticket_url = $4, updated_at = now() WHERE id = $1::bigint', [
      groupId, after.status, after.note, after.ticket_url,
    ])
    const changed = (Object.keys(after) as (keyof typeof after)[]).filter((k) => after[k] !== before[k])
    if (changed.length === 0) return
    await recordAudit({
      sql: tx,
      actor,
      action: 'group.updated',
      subject: { type: 'group', id: groupId },
      summary: `${before.title}: ${changed.map((k) => (k === 'status' ? `status ${before.status} → ${after.status}` : k === 'note' ? 'note edited' : 'ticket link set')).join(', ')}`,
      details: Object.fromEntries(changed.map((k) => [k, { from: before[k], to: after[k] }])),
      outcome: 'applied',
    })
  })
  return (await getGroup({ id, range: '24h', sourceIds })).group
}
