import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { entityKeyRuleSchema } from '@/lib/shared/schemas/source'
import type { ControlEvent, PauseDto } from '@/lib/shared/schemas/pause'
import { HELD_UNEXPECTED_FLAG } from './held-row'

/**
 * Held messages of a pause: rows stored from a hold source whose held_from is the paused queue and whose entity
 * is the paused one (any entity for a whole-queue pause), over dead_letters d joined to its status st. Served by
 * dead_letter_states_held_idx (the rows held now) or dead_letters_held_from_idx (a queue's ever-held rows). Rows
 * flagged held-unexpected are not the pause's: its release leaves them where they are.
 */
export const HELD_MATCH = `st.status = 'held' AND d.held_from = p.queue AND (p.entity_key IS NULL OR d.entity_key = p.entity_key)
  AND NOT ('${HELD_UNEXPECTED_FLAG}' = ANY (d.flags))
  AND d.source_id IN (SELECT hs.id FROM sources hs WHERE hs.kind = 'hold' AND hs.vhost = p.vhost)`

export const PAUSE_COLUMNS = `p.id::text, p.source_id::text, p.vhost, p.queue, p.entity_key, p.entity_key_rule, p.status, p.reason,
  p.created_by, p.created_at, p.replay_job_id::text, p.resumed_at, p.resumed_by, p.version::text,
  CASE WHEN p.status = 'resumed' THEN 0 ELSE (SELECT count(*)::int FROM dead_letters d JOIN dead_letter_states st ON st.dead_letter_id = d.id WHERE ${HELD_MATCH}) END AS held`

export type PauseRow = {
  id: string; source_id: string | null; vhost: string; queue: string; entity_key: string | null; entity_key_rule: unknown
  status: PauseDto['status']; reason: string | null; created_by: string; created_at: Date; replay_job_id: string | null
  resumed_at: Date | null; resumed_by: string | null; version: string; held: number
}

/**
 * Field by field, like every row-to-DTO mapper (replay/to-replay-dto.ts is another): the DTO is the API contract
 * (docs/ARCHITECTURE.md#the-api-contract), so a renamed column never renames a field, and the compiler checks both sides.
 */
export function toPauseDto(row: PauseRow): PauseDto {
  const rule = entityKeyRuleSchema.safeParse(row.entity_key_rule)
  return {
    id: row.id,
    sourceId: row.source_id,
    vhost: row.vhost,
    queue: row.queue,
    entityKey: row.entity_key,
    entityKeyRule: rule.success ? rule.data : null,
    status: row.status,
    reason: row.reason,
    createdBy: row.created_by,
    createdAt: new Date(row.created_at).toISOString(),
    replayJobId: row.replay_job_id,
    held: row.held,
    resumedAt: row.resumed_at ? new Date(row.resumed_at).toISOString() : null,
    resumedBy: row.resumed_by,
    version: Number(row.version),
  }
}

/** Pauses matching `where` (on pauses `p`, numbered against `params`), by id. */
export async function selectPauses({ sql, where, params }: { sql: Sql; where: string; params: unknown[] }): Promise<PauseDto[]> {
  const { rows } = await sql.query<PauseRow>(`SELECT ${PAUSE_COLUMNS} FROM pauses p WHERE ${where} ORDER BY p.id`, params)
  return rows.map(toPauseDto)
}

/** Serialises registry changes: versions then commit in the order they were taken, so a list at version N holds every change up to N. */
const REGISTRY_LOCK = 0x4c5a5055 // "LZPU"

/**
 * Call in the transaction that changes the registry, before it takes versions (nextval('pause_registry_version'),
 * docs/ARCHITECTURE.md#pause-hold-release): held until commit, so changes commit in version order.
 */
export async function lockRegistry({ sql }: { sql: Sql }): Promise<void> {
  await sql.query('SELECT pg_advisory_xact_lock($1::bigint)', [REGISTRY_LOCK])
}

export function toControlEvents(type: ControlEvent['type'], pauses: PauseDto[]): ControlEvent[] {
  return [...pauses].sort((a, b) => a.version - b.version).map((pause) => ({ type, version: pause.version, pause }))
}
