import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import type { Prisma } from '@/lib/generated/prisma/client'
import { DEFAULT_STAGED_FROM_MESSAGES } from '@/lib/shared/replay-stages'
import { DEFAULT_LARGE_JOB_MESSAGES, type ReplayConfirmSettingsDto, type UpdateReplayConfirmSettingsInput } from '@/lib/shared/schemas/replay-confirm'


const ROW = { id: 1 }

async function read(prisma: Prisma.TransactionClient): Promise<ReplayConfirmSettingsDto> {
  const row = await prisma.replayConfirmSettings.findUnique({ where: ROW })
  return row
    ? { largeJobMessages: row.largeJobMessages, stagedFromMessages: row.stagedFromMessages, updatedAt: row.updatedAt.toISOString(), updatedBy: row.updatedBy }
    : { largeJobMessages: DEFAULT_LARGE_JOB_MESSAGES, stagedFromMessages: DEFAULT_STAGED_FROM_MESSAGES, updatedAt: null, updatedBy: null }
}

/** GET /api/settings/replay-confirm; also read for every plan, so an edit applies to the next replay in every process. */
export function getReplayConfirmSettings({ db }: { db: Pick<Db, 'prisma'> }): Promise<ReplayConfirmSettingsDto> {
  return read(db.prisma)
}

export type UpdateReplayConfirmSettingsOptions = { db: Db; input: UpdateReplayConfirmSettingsInput; actor: string }

/** PUT /api/settings/replay-confirm (admins): from how many messages a replay needs its count confirmed; audited. */
export function updateReplayConfirmSettings({ db, input, actor }: UpdateReplayConfirmSettingsOptions): Promise<ReplayConfirmSettingsDto> {
  return crudTransaction(db, async ({ prisma, sql }) => {
    const before = await read(prisma)
    const written = { largeJobMessages: input.largeJobMessages, stagedFromMessages: input.stagedFromMessages ?? before.stagedFromMessages, updatedAt: new Date(), updatedBy: actor }
    await prisma.replayConfirmSettings.upsert({ where: ROW, create: { ...ROW, ...written }, update: written })
    const after = await read(prisma)
    await recordConfigChange({
      sql,
      actor,
      action: 'settings.updated',
      subject: { type: 'settings', id: 'replay-confirm' },
      summary: `Replays of ${after.largeJobMessages} messages or more need their count confirmed; from ${after.stagedFromMessages} they are staged by default`,
      before: { largeJobMessages: before.largeJobMessages, stagedFromMessages: before.stagedFromMessages },
      after: { largeJobMessages: after.largeJobMessages, stagedFromMessages: after.stagedFromMessages },
    })
    return after
  })
}
