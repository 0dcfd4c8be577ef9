import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { EntityKeyRule } from '@/lib/shared/schemas/source'
import type { PauseDto } from '@/lib/shared/schemas/pause'
import { auditPauses } from './pause-audit'
import { lockRegistry, selectPauses } from './pause-row'

export type NewPause = {
  sourceId: string | null
  vhost: string
  queue: string
  entityKey: string | null
  entityKeyRule: EntityKeyRule | null
  reason: string | null
}

export type InsertPausesOptions = {
  /** The transaction that changes the registry (it takes the registry lock). */
  sql: Sql
  actor: string
  pauses: NewPause[]
  replayJobId?: string | null
  /** Audit summary per pause; default "Paused …". */
  summary?: (pause: PauseDto) => string
}

/**
 * Inserts active pauses, each at the next registry version, and audits them; the caller publishes the 'pause'
 * events after commit. One statement for any number of pauses (a replay may pause thousands of entities).
 */
export async function insertPauses({ sql, ...options }: InsertPausesOptions): Promise<PauseDto[]> {
  if (options.pauses.length === 0) return []
  await lockRegistry({ sql })
  const column = <T>(pick: (p: NewPause) => T) => options.pauses.map(pick)
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO pauses (source_id, vhost, queue, entity_key, entity_key_rule, status, reason, created_by, replay_job_id, version)
     SELECT t.source_id, t.vhost, t.queue, t.entity_key, t.rule::jsonb, 'active', t.reason, $7, $8::bigint, nextval('pause_registry_version')
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS t(source_id, vhost, queue, entity_key, rule, reason)
     RETURNING id::text`,
    [
      column((p) => p.sourceId), column((p) => p.vhost), column((p) => p.queue), column((p) => p.entityKey),
      column((p) => (p.entityKeyRule ? JSON.stringify(p.entityKeyRule) : null)), column((p) => p.reason),
      options.actor, options.replayJobId ?? null,
    ],
  )
  const created = await selectPauses({ sql, where: 'p.id = ANY($1::bigint[])', params: [rows.map((r) => r.id)] })
  await auditPauses({ sql, pauses: created, actor: options.actor, action: 'pause.created', verb: 'Paused', summary: options.summary })
  return created
}

/** Open (active or releasing) pauses on exactly these keys; a null entity key means the whole-queue pause. */
export async function findOpenPauses({ sql, keys }: { sql: Sql; keys: { vhost: string; queue: string; entityKey: string | null }[] }): Promise<PauseDto[]> {
  if (keys.length === 0) return []
  return selectPauses({
    sql,
    where: `p.status <> 'resumed' AND (p.vhost, p.queue, coalesce(p.entity_key, '')) IN (
       SELECT k.vhost, k.queue, coalesce(k.entity_key, '') FROM unnest($1::text[], $2::text[], $3::text[]) AS k(vhost, queue, entity_key))`,
    params: [keys.map((k) => k.vhost), keys.map((k) => k.queue), keys.map((k) => k.entityKey)],
  })
}


/** Marks pauses resumed, each at the next registry version, and audits them; returns them for the 'resume' events. */
export async function markResumed({ sql, ...options }: { sql: Sql; ids: string[]; actor: string; summary?: (pause: PauseDto) => string }): Promise<PauseDto[]> {
  if (options.ids.length === 0) return []
  await lockRegistry({ sql })
  const { rows } = await sql.query<{ id: string }>(
    `UPDATE pauses SET status = 'resumed', resumed_at = now(), resumed_by = $2, version = nextval('pause_registry_version')
     WHERE id = ANY($1::bigint[]) AND status <> 'resumed' RETURNING id::text`,
    [options.ids, options.actor],
  )
  if (rows.length === 0) return []
  const resumed = await selectPauses({ sql, where: 'p.id = ANY($1::bigint[])', params: [rows.map((r) => r.id)] })
  await auditPauses({ sql, pauses: resumed, actor: options.actor, action: 'pause.resumed', verb: 'Resumed', summary: options.summary })
  return resumed
}
