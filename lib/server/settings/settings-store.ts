import 'server-only'
import type { Prisma } from '@/lib/generated/prisma/client'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'

/**
 * The single-row settings tables an admin edits in the UI, through Prisma (plain CRUD:
 * docs/ARCHITECTURE.md#how-code-gets-the-database). Each holds one allow-list: `webhook_settings.allowed_hosts`
 * (hosts webhooks may reach although not public, lib/server/alerts/webhook-settings.ts) and
 * `replay_target_settings.custom_target_patterns` (exchanges custom replay targets may name,
 * lib/server/replay/replay-target-settings.ts). The row (id 1) is absent until an admin first saves it.
 */
export type AllowListSetting = 'webhook-hosts' | 'replay-targets'

export type StoredAllowList = { entries: string[]; updatedAt: Date; updatedBy: string | null }

type Tx = Prisma.TransactionClient
type Written = { updatedAt: Date; updatedBy: string }

const ROW = { id: 1 }

const TABLES: Record<AllowListSetting, { read(prisma: Tx): Promise<StoredAllowList | null>; write(prisma: Tx, entries: string[], written: Written): Promise<unknown> }> = {
  'webhook-hosts': {
    read: async (prisma) => {
      const row = await prisma.webhookSettings.findUnique({ where: ROW })
      return row && { entries: row.allowedHosts, updatedAt: row.updatedAt, updatedBy: row.updatedBy }
    },
    write: (prisma, allowedHosts, written) => prisma.webhookSettings.upsert({ where: ROW, create: { ...ROW, allowedHosts, ...written }, update: { allowedHosts, ...written } }),
  },
  'replay-targets': {
    read: async (prisma) => {
      const row = await prisma.replayTargetSettings.findUnique({ where: ROW })
      return row && { entries: row.customTargetPatterns, updatedAt: row.updatedAt, updatedBy: row.updatedBy }
    },
    write: (prisma, customTargetPatterns, written) =>
      prisma.replayTargetSettings.upsert({ where: ROW, create: { ...ROW, customTargetPatterns, ...written }, update: { customTargetPatterns, ...written } }),
  },
}

/** The stored allow-list, or null when it was never saved. `prisma`: the client or a transaction's. */
export function readAllowList({ prisma, setting }: { prisma: Tx; setting: AllowListSetting }): Promise<StoredAllowList | null> {
  return TABLES[setting].read(prisma)
}

export type ReplaceAllowListOptions = {
  db: Db
  setting: AllowListSetting
  entries: string[]
  actor: string
  /** The audit entry's summary, and the name the list has in its before and after. */
  summary: string
  field: string
}

/** Replaces the stored allow-list; the change is audited with its before and after in the same transaction. */
export async function replaceAllowList({ db, setting, entries, actor, summary, field }: ReplaceAllowListOptions): Promise<StoredAllowList> {
  return crudTransaction(db, async ({ prisma, sql }) => {
    const before = (await readAllowList({ prisma, setting }))?.entries ?? []
    await TABLES[setting].write(prisma, entries, { updatedAt: new Date(), updatedBy: actor })
    const after = (await readAllowList({ prisma, setting }))!
    await recordConfigChange({ sql, actor, action: 'settings.updated', subject: { type: 'settings', id: setting }, summary, before: { [field]: before }, after: { [field]: after.entries } })
    return after
  })
}
