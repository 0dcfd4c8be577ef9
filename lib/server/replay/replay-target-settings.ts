import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getConfig, type Config } from '@/lib/server/platform/config'
import { getDb } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { ReplayTargetSettingsDto, UpdateReplayTargetSettingsInput } from '@/lib/shared/schemas/replay-targets'

type SettingsRow = { custom_target_patterns: string[]; updated_at: Date; updated_by: string | null }

async function readSettings(sql: Sql): Promise<SettingsRow | null> {
  const { rows } = await sql.query<SettingsRow>('SELECT custom_target_patterns, updated_at, updated_by FROM replay_target_settings WHERE id = 1')
  return rows[0] ?? null
}

const toDto = (row: SettingsRow | null, config: Config): ReplayTargetSettingsDto => ({
  customTargetPatterns: row?.custom_target_patterns ?? [],
  environmentPatterns: config.LAZARUS_REPLAY_TARGET_PATTERNS,
  updatedAt: row ? new Date(row.updated_at).toISOString() : null,
  updatedBy: row?.updated_by ?? null,
})

/** GET /api/settings/replay-targets */
export async function getReplayTargetSettings(config: Config = getConfig()): Promise<ReplayTargetSettingsDto> {
  const { sql } = await getDb()
  return toDto(await readSettings(sql), config)
}

/** PUT /api/settings/replay-targets (admins): replaces the stored allow-list of custom replay target exchanges. */
export async function updateReplayTargetSettings(input: UpdateReplayTargetSettingsInput, actor: string, config: Config = getConfig()): Promise<ReplayTargetSettingsDto> {
  const { sql } = await getDb()
  const before = await storedCustomTargetPatterns(sql)
  const { rows } = await sql.query<SettingsRow>(
    `INSERT INTO replay_target_settings (id, custom_target_patterns, updated_at, updated_by) VALUES (1, $1::text[], now(), $2)
     ON CONFLICT (id) DO UPDATE SET custom_target_patterns = excluded.custom_target_patterns, updated_at = excluded.updated_at, updated_by = excluded.updated_by
     RETURNING custom_target_patterns, updated_at, updated_by`,
    [input.customTargetPatterns, actor],
  )
  await recordConfigChange({ sql: sql, actor, action: 'settings.updated', subject: { type: 'settings', id: 'replay-targets' }, summary: 'Changed the custom replay target allow-list', before: { customTargetPatterns: before }, after: { customTargetPatterns: rows[0].custom_target_patterns } })
  return toDto(rows[0], config)
}

/** The stored patterns (read for every plan, so an edit applies to the next replay in every process). */
export async function storedCustomTargetPatterns(sql: Sql): Promise<string[]> {
  return (await readSettings(sql))?.custom_target_patterns ?? []
}
