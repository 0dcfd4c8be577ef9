import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

/*
 * Re-failure linking (docs/ARCHITECTURE.md#stages-and-halts). Every replayed copy carries x-lazarus-replay-id; when it
 * dead-letters again the drainer stores it in dead_letters.lineage_replay_id, as it did before staged replays existed.
 * The link to the job and the original is a join at read and decision time (lineage_replay_id = replay_items.replay_id),
 * through dead_letters_lineage_replay_idx, a partial index holding only rows that carry a replay id. The drainer
 * therefore writes nothing more per message, and a letter that never went through a replay costs no index entry:
 * ingest pays only for the replayed copies themselves (BENCH_REPLAYED_SHARE=0.2 npm run bench:drain). Writing a link row at
 * ingest instead would cost a lookup per replayed copy inside the drain's transaction.
 *
 * Reads start from the replayed copies (few: retention deletes them with everything else), materialised, and probe
 * the job's items by replay id; never the other way round, which would read every item of a large job per check.
 */

export type RefailureRow = {
  seq: number
  stage: number
  dead_letter_id: string
  original_id: string
  group_id: string
  group_title: string
  new_group: boolean
  counted: boolean
  within_s: number | null
  published_at: Date | null
}

/** Every copy of the job's replayed messages that came back dead, with its stage and whether it counts toward a halt. */
export async function selectRefailures({ sql, jobId, limit = 100_000 }: { sql: Sql; jobId: string; limit?: number }): Promise<RefailureRow[]> {
  const { rows } = await sql.query<RefailureRow>(
    `WITH j AS (SELECT id, created_at, stage_bounds, group_ids, coalesce(refailures_since, '-infinity'::timestamptz) AS since FROM replay_jobs WHERE id = $1::bigint),
     copies AS MATERIALIZED (
       SELECT d.id, d.lineage_replay_id, d.group_id, d.ingested_at FROM dead_letters d, j
       WHERE d.lineage_replay_id IS NOT NULL AND d.ingested_at >= j.created_at
     )
     SELECT i.seq, (SELECT count(*)::int FROM unnest(coalesce(j.stage_bounds, '{}')) b WHERE b < i.seq) AS stage,
       c.id::text AS dead_letter_id, i.dead_letter_id::text AS original_id, c.group_id::text, coalesce(g.title, '') AS group_title,
       (j.group_ids IS NOT NULL AND NOT (c.group_id = ANY(j.group_ids))) AS new_group, c.ingested_at >= j.since AS counted,
       extract(epoch FROM c.ingested_at - i.published_at)::float8 AS within_s, i.published_at
     FROM copies c CROSS JOIN j
     JOIN replay_items i ON i.replay_id = c.lineage_replay_id AND i.job_id = j.id AND i.kind = 'replay'
     LEFT JOIN error_groups g ON g.id = c.group_id
     ORDER BY i.seq LIMIT $2`,
    [jobId, limit],
  )
  return rows
}

export type CanaryRow = {
  seq: number; dead_letter_id: string; entity_key: string | null; published_at: Date | null; status: string
  refailed_id: string | null; within_s: number | null
}

/** The canary's items (the first `through` seqs, at most `limit`) with the dead letter each copy became, if any. */
export async function selectCanary({ sql, jobId, through, limit }: { sql: Sql; jobId: string; through: number; limit: number }): Promise<CanaryRow[]> {
  const { rows } = await sql.query<CanaryRow>(
    `SELECT i.seq, i.dead_letter_id::text, d.entity_key, i.published_at, i.status, r.id::text AS refailed_id,
       extract(epoch FROM r.ingested_at - i.published_at)::float8 AS within_s
     FROM replay_items i
     LEFT JOIN dead_letters d ON d.id = i.dead_letter_id
     LEFT JOIN LATERAL (SELECT c.id, c.ingested_at FROM dead_letters c WHERE c.lineage_replay_id = i.replay_id ORDER BY c.id LIMIT 1) r ON TRUE
     WHERE i.job_id = $1::bigint AND i.kind = 'replay' AND i.seq <= $2::int
     ORDER BY i.seq LIMIT $3::int`,
    [jobId, through, limit],
  )
  return rows
}
