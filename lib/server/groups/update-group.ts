import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { GroupDto, UpdateGroupInput } from '@/lib/shared/schemas/group'
import { getGroup } from './get-group'
import { groupHasMessagesIn, lockGroupTriage, setGroupTriage } from './groups-store'

export type UpdateGroupOptions = { db: Db; id: string; input: UpdateGroupInput; actor: string } & SourceScope

/**
 * Sets a group's triage state (status, note, ticket link) and audits the change. A resolved group reopens by itself
 * when new failures arrive (lib/server/engines/drainer/store-batch.ts); acknowledged and muted ones keep their state.
 * With `sourceIds`, a group none of those sources holds a message of is not found, and the group returned is as
 * those sources show it.
 */
export async function updateGroup({ db, id, input, actor, ...scope }: UpdateGroupOptions): Promise<GroupDto> {
  const groupId = parseId(id, 'group').toString()
  const sourceIds = allowedSourceIds(scope)
  await db.sql.transaction(async (tx) => {
    if (sourceIds && !(await groupHasMessagesIn({ sql: tx, groupId, sourceIds }))) throw notFound(`group ${id}`)
    const before = await lockGroupTriage({ sql: tx, groupId })
    if (!before) throw notFound(`group ${id}`)
    const after = {
      status: input.status ?? before.status,
      note: input.note === undefined ? before.note : input.note?.trim() || null,
      ticket_url: input.ticketUrl === undefined ? before.ticket_url : input.ticketUrl,
    }
    await setGroupTriage({ sql: tx, groupId, triage: after })
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
  return (await getGroup({ db, id, range: '24h', sourceIds })).group
}
