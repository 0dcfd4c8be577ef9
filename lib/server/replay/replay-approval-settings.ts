import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { getConfig } from '@/lib/server/platform/config'
import type { Prisma } from '@/lib/generated/prisma/client'
import type { ReplayApprovalSettingsDto, UpdateReplayApprovalSettingsInput } from '@/lib/shared/schemas/replay-approval'
import { APPROVAL_OFF } from './approval-policy'

const ROW = { id: 1 }

const envTtlSeconds = () => Math.round(getConfig().LAZARUS_REPLAY_APPROVAL_TTL_H * 3600)

async function read(prisma: Prisma.TransactionClient): Promise<ReplayApprovalSettingsDto> {
  const row = await prisma.replayApprovalSettings.findUnique({ where: ROW })
  if (!row) return { ...APPROVAL_OFF, ttlSeconds: null, effectiveTtlSeconds: envTtlSeconds(), updatedAt: null, updatedBy: null }
  return {
    aboveMessages: row.aboveMessages,
    editedMessages: row.editedMessages,
    customTarget: row.customTarget,
    criticalSources: row.criticalSources,
    ttlSeconds: row.ttlSeconds,
    effectiveTtlSeconds: row.ttlSeconds ?? envTtlSeconds(),
    updatedAt: row.updatedAt.toISOString(),
    updatedBy: row.updatedBy,
  }
}

/** GET /api/settings/replay-approval; read for every plan, so an edit applies to the next replay in every process. */
export function getReplayApprovalSettings({ db }: { db: Pick<Db, 'prisma'> }): Promise<ReplayApprovalSettingsDto> {
  return read(db.prisma)
}

export type UpdateReplayApprovalSettingsOptions = { db: Db; input: UpdateReplayApprovalSettingsInput; actor: string }

/** PUT /api/settings/replay-approval (admins): which replays need a second operator's approval, and how long they wait. */
export function updateReplayApprovalSettings({ db, input, actor }: UpdateReplayApprovalSettingsOptions): Promise<ReplayApprovalSettingsDto> {
  return crudTransaction(db, async ({ prisma, sql }) => {
    const before = await read(prisma)
    const written = { ...input, updatedAt: new Date(), updatedBy: actor }
    await prisma.replayApprovalSettings.upsert({ where: ROW, create: { ...ROW, ...written }, update: written })
    const after = await read(prisma)
    const pick = ({ aboveMessages, editedMessages, customTarget, criticalSources, ttlSeconds }: ReplayApprovalSettingsDto) => ({ aboveMessages, editedMessages, customTarget, criticalSources, ttlSeconds })
    await recordConfigChange({
      sql,
      actor,
      action: 'settings.updated',
      subject: { type: 'settings', id: 'replay-approval' },
      summary: 'Replay approval policy changed',
      before: pick(before),
      after: pick(after),
    })
    return after
  })
}
