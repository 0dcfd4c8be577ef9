import 'server-only'
import { getConfig, type Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { readAllowList, replaceAllowList, type StoredAllowList } from '@/lib/server/settings/settings-store'
import type { ReplayTargetSettingsDto, UpdateReplayTargetSettingsInput } from '@/lib/shared/schemas/replay-targets'

const toDto = (stored: StoredAllowList | null, config: Config): ReplayTargetSettingsDto => ({
  customTargetPatterns: stored?.entries ?? [],
  environmentPatterns: config.LAZARUS_REPLAY_TARGET_PATTERNS,
  updatedAt: stored?.updatedAt.toISOString() ?? null,
  updatedBy: stored?.updatedBy ?? null,
})

/** GET /api/settings/replay-targets */
export async function getReplayTargetSettings({ db, config = getConfig() }: { db: Db; config?: Config }): Promise<ReplayTargetSettingsDto> {
  return toDto(await readAllowList({ prisma: db.prisma, setting: 'replay-targets' }), config)
}

export type UpdateReplayTargetSettingsOptions = { db: Db; input: UpdateReplayTargetSettingsInput; actor: string; config?: Config }

/** PUT /api/settings/replay-targets (admins): replaces the stored allow-list of custom replay target exchanges. */
export async function updateReplayTargetSettings({ db, input, actor, config = getConfig() }: UpdateReplayTargetSettingsOptions): Promise<ReplayTargetSettingsDto> {
  const stored = await replaceAllowList({
    db,
    setting: 'replay-targets',
    entries: input.customTargetPatterns,
    actor,
    summary: 'Changed the custom replay target allow-list',
    field: 'customTargetPatterns',
  })
  return toDto(stored, config)
}

/** The stored patterns (read for every plan, so an edit applies to the next replay in every process). */
export async function storedCustomTargetPatterns({ db }: { db: Db }): Promise<string[]> {
  return (await readAllowList({ prisma: db.prisma, setting: 'replay-targets' }))?.entries ?? []
}
