import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { PAUSE_COLUMNS, type PauseRow } from './pause-row'

/**
 * The SQL of pausing and resuming as the API does it: which queue a source's messages failed in, the pause a resume
 * acts on, the registry list guards poll. Registry writes (each at the next version, audited) are insert-pause.ts;
 * the pause columns and held-message match are pause-row.ts; guard heartbeats guard-heartbeat.ts.
 */

export type PausableSource = { id: string; vhost: string; queue: string; kind: string; entity_key: unknown }

export async function findPausableSource({ sql, sourceId }: { sql: Sql; sourceId: string }): Promise<PausableSource | undefined> {
  const { rows } = await sql.query<PausableSource>('SELECT id::text, vhost, queue, kind, entity_key FROM sources WHERE id = $1::bigint', [sourceId])
  return rows[0]
}

/** The sources a pause can name (not the hold queue), of `sourceIds` only when given. */
export async function listPausableSources({ sql, sourceIds }: { sql: Sql; sourceIds: string[] | null }): Promise<PausableSource[]> {
  const { rows } = await sql.query<PausableSource>(
    `SELECT id::text, vhost, queue, kind, entity_key FROM sources WHERE kind = 'dlq'${sourceIds ? ' AND id = ANY($1::bigint[])' : ''} ORDER BY vhost, queue`,
    sourceIds ? [sourceIds] : [],
  )
  return rows
}

/** Whether any stored dead letter of the source failed in `queue`; the common case finds one among the newest rows. */
export async function isOriginQueue({ sql, sourceId, queue }: { sql: Sql; sourceId: string; queue: string }): Promise<boolean> {
  const { rows } = await sql.query<{ found: boolean }>(
    'SELECT EXISTS (SELECT 1 FROM dead_letters WHERE source_id = $1::bigint AND origin_queue = $2) AS found',
    [sourceId, queue],
  )
  return rows[0].found
}

/** Up to `limit` queues the source's dead letters failed in, by name (a full pass over the source: for refusals, which are rare). */
export async function originQueues({ sql, sourceId, limit }: { sql: Sql; sourceId: string; limit: number }): Promise<string[]> {
  const { rows } = await sql.query<{ origin_queue: string }>(
    `SELECT DISTINCT origin_queue FROM dead_letters WHERE source_id = $1::bigint AND origin_queue IS NOT NULL ORDER BY origin_queue LIMIT ${limit}`,
    [sourceId],
  )
  return rows.map((r) => r.origin_queue)
}

/** The origin queue most of the source's `sample` most recent dead letters failed in (a bounded sample, not a scan). */
export async function mostCommonOriginQueue({ sql, sourceId, sample }: { sql: Sql; sourceId: string; sample: number }): Promise<string | null> {
  const { rows } = await sql.query<{ origin_queue: string }>(
    `SELECT origin_queue FROM (
       SELECT origin_queue FROM dead_letters WHERE source_id = $1::bigint ORDER BY failed_at DESC, id DESC LIMIT ${sample}
     ) recent WHERE origin_queue IS NOT NULL GROUP BY origin_queue ORDER BY count(*) DESC, origin_queue LIMIT 1`,
    [sourceId],
  )
  return rows[0]?.origin_queue ?? null
}

export type PauseToResume = { vhost: string; queue: string; entity_key: string | null; status: string; replay_job_id: string | null; job_status: string | null }

/** The pause (of `sourceIds` only, when given) with its job's status, locked until the transaction ends. */
export async function lockPauseToResume({ sql, pauseId, sourceIds }: { sql: Sql; pauseId: string; sourceIds: string[] | null }): Promise<PauseToResume | undefined> {
  const { rows } = await sql.query<PauseToResume>(
    `SELECT p.vhost, p.queue, p.entity_key, p.status, p.replay_job_id::text, j.status AS job_status
     FROM pauses p LEFT JOIN replay_jobs j ON j.id = p.replay_job_id
     WHERE p.id = $1::bigint${sourceIds ? ' AND p.source_id = ANY($2::bigint[])' : ''} FOR UPDATE OF p`,
    sourceIds ? [pauseId, sourceIds] : [pauseId],
  )
  return rows[0]
}

/** The pause stays in force while `jobId` releases its held messages; the executor resumes it when the job ends. */
export async function markReleasing({ sql, pauseId, jobId }: { sql: Sql; pauseId: string; jobId: string }): Promise<void> {
  await sql.query(`UPDATE pauses SET status = 'releasing', replay_job_id = $2::bigint WHERE id = $1::bigint`, [pauseId, jobId])
}

export type PauseListQuery = { openOnly: boolean; sourceIds: string[] | null; queue?: { vhost: string; name: string }; limit: number }

/**
 * The registry's version and the pauses listed, open ones first, then newest first, in one statement: the version and
 * the list come from the same snapshot. The version is the registry's even when the list is narrowed.
 */
export async function selectPauseList({ sql, openOnly, sourceIds, queue, limit }: { sql: Sql } & PauseListQuery): Promise<{ version: string; rows: PauseRow[] }> {
  const conditions: string[] = []
  const params: unknown[] = []
  if (openOnly) conditions.push(`p.status <> 'resumed'`)
  if (sourceIds) {
    params.push(sourceIds)
    conditions.push(`p.source_id = ANY($${params.length}::bigint[])`)
  }
  if (queue) {
    params.push(queue.vhost, queue.name)
    conditions.push(`p.vhost = $${params.length - 1} AND p.queue = $${params.length}`)
  }
  const filter = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''
  const { rows } = await sql.query<PauseRow & { registry_version: string }>(
    `WITH registry AS (SELECT coalesce(max(version), 0)::text AS registry_version FROM pauses)
     SELECT registry.registry_version, listed.* FROM registry
     LEFT JOIN LATERAL (
       SELECT ${PAUSE_COLUMNS} FROM pauses p ${filter}
       ORDER BY (p.status = 'resumed'), p.id DESC LIMIT ${limit}
     ) listed ON true`,
    params,
  )
  return { version: rows[0]?.registry_version ?? '0', rows: rows.filter((r) => r.id !== null) }
}
