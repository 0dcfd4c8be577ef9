import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { addGroupCounts } from '@/lib/server/groups/groups-store'
import { transitionReplayJob } from '@/lib/server/replay/transition-replay-job'
import { transitionsOf } from '@/lib/shared/replay-job-machine'

/**
 * The replay executor's SQL: claiming and renewing jobs, reading items in publish order, and writing outcomes in
 * batches (one statement per window of items, never one per message).
 */

export type JobRow = {
  id: string
  kind: 'replay' | 'release'
  status: string
  rate_per_second: number
  created_by: string
  cancel_requested_at: Date | null
  run_failures: number
  /** A staged job (stage-control.ts). */
  staged: boolean
  /** Copies start a new trace (docs/ARCHITECTURE.md#traces), as the job was created. */
  new_trace: boolean
}

const JOB_RETURNING = 'id::text, kind, status, rate_per_second, created_by, cancel_requested_at, run_failures, stage_bounds IS NOT NULL AS staged, new_trace'

/**
 * Claims the oldest runnable job whose lease is free or expired (a crashed worker's), for `leaseMs`. A staged job
 * observing a stage's window is not runnable before its not_before.
 */
export async function claimJob(options: { sql: Sql; owner: string; leaseMs: number; skip: string[] }): Promise<JobRow | null> {
  const { sql } = options
  // pending → running, or running → running: a takeover of a lease given back or expired (lib/shared/replay-job-machine.ts).
  const claimable = transitionsOf('claim').map((t) => t.from)
  const { rows } = await transitionReplayJob<JobRow>({
    sql,
    event: 'claim',
    set: `lease_owner = $1, lease_expires_at = now() + $2::int * interval '1 millisecond', started_at = coalesce(j.started_at, now())`,
    where: `j.id = (
       SELECT id FROM replay_jobs
       WHERE status = ANY($4::text[]) AND (lease_expires_at IS NULL OR lease_expires_at < now()) AND NOT (id = ANY($3::bigint[]))
         AND (not_before IS NULL OR not_before <= now())
       ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
     )`,
    params: [options.owner, options.leaseMs, options.skip, claimable],
    returning: JOB_RETURNING,
  })
  return rows[0] ?? null
}

export type Heartbeat = { mine: boolean; cancel: boolean }

/** Extends the lease (and reports cancellation); `mine` is false when another worker took the job over. */
export async function renewLease(options: { sql: Sql; jobId: string; owner: string; leaseMs: number; rate: number | null }): Promise<Heartbeat> {
  const { sql } = options
  const { rows } = await sql.query<{ cancel: boolean }>(
    `UPDATE replay_jobs SET lease_expires_at = now() + $3::int * interval '1 millisecond', current_rate = $4::real,
       rate_sampled_at = now(), updated_at = now()
     WHERE id = $1::bigint AND lease_owner = $2 RETURNING cancel_requested_at IS NOT NULL AS cancel`,
    [options.jobId, options.owner, options.leaseMs, options.rate],
  )
  return rows[0] ? { mine: true, cancel: rows[0].cancel } : { mine: false, cancel: false }
}

export async function pollJob(options: { sql: Sql; jobId: string; owner: string }): Promise<Heartbeat> {
  const { sql } = options
  const { rows } = await sql.query<{ cancel: boolean; mine: boolean }>(
    'SELECT cancel_requested_at IS NOT NULL AS cancel, coalesce(lease_owner = $2, false) AS mine FROM replay_jobs WHERE id = $1::bigint',
    [options.jobId, options.owner],
  )
  return rows[0] ?? { mine: false, cancel: false }
}

/** Lets another worker (or this one, later) take the job at once; the job stays pending/running. */
export async function releaseLease(options: { sql: Sql; jobId: string; owner: string; error?: string | null; failed?: boolean }): Promise<void> {
  const { sql } = options
  await sql.query(
    `UPDATE replay_jobs SET lease_owner = NULL, lease_expires_at = NULL, current_rate = NULL, updated_at = now(),
       error = coalesce($3, error), run_failures = run_failures + CASE WHEN $4 THEN 1 ELSE 0 END
     WHERE id = $1::bigint AND lease_owner = $2`,
    [options.jobId, options.owner, options.error ?? null, options.failed ?? false],
  )
}

export async function setJobError(options: { sql: Sql; jobId: string; owner: string; error: string | null }): Promise<void> {
  const { sql } = options
  await sql.query('UPDATE replay_jobs SET error = $3, updated_at = now() WHERE id = $1::bigint AND lease_owner = $2', [options.jobId, options.owner, options.error])
}

export type ItemRow = {
  seq: number
  kind: 'replay' | 'release'
  replay_id: string
  exchange: string | null
  routing_key: string | null
  dead_letter_id: string
  group_id: string
  source_id: string
  row_status: string
  /** A Buffer from node-pg, a plain Uint8Array from PGlite (the publisher makes it a Buffer). */
  body: Uint8Array
  /** JSON text, parsed just before the publish: a chunk's parsed tables would outlive V8's young generation. */
  properties_json: string
  headers_json: string
  replay_count: number
  lineage_origin_id: string | null
  held_from: string | null
  pause_id: string | null
  /** The message revision published instead of the original (x-lazarus-revision); null: the original. */
  revision: number | null
  /** Its source's broker: a JetStream item's routing_key is the subject it is published to (docs/jetstream.md#replay). */
  broker: 'rabbitmq' | 'jetstream'
}

/**
 * Takes the next open items after `afterSeq` (and at most `afterSeq + span`) for publishing and returns them with
 * their messages, in publish order: at most `limit`, and no more body bytes than `maxBytes` (but always at least one).
 * The same statement raises the job's claimed_through to the last of them, committed durably before any is published,
 * so after a crash only pending items at or below it (shown as in_flight) can have reached the broker; they are taken
 * again, with their replay ids, by the next run. Writing that one number instead of each item's status saves a row
 * version per message. The seq bound keeps each claim's work constant however large the job: a running job's items
 * are far newer than the planner's statistics, and an unbounded scan could end up reading every open item per claim.
 */
export async function claimItems(options: { sql: Sql; jobId: string; afterSeq: number; span: number; limit: number; maxBytes: number }): Promise<ItemRow[]> {
  const { sql } = options
  const { rows } = await sql.query<ItemRow>(
    `WITH next AS (
       SELECT w.seq, w.kind, w.replay_id, w.exchange, w.routing_key, w.dead_letter_id, w.revision FROM (
         SELECT c.*, sum(d.body_size) OVER (ORDER BY c.seq) - d.body_size AS before
         FROM (
           SELECT i.seq, i.kind, i.replay_id, i.exchange, i.routing_key, i.dead_letter_id, i.revision FROM replay_items i
           WHERE i.job_id = $1::bigint AND i.seq > $2::int AND i.seq <= $2::int + $5::int AND i.status IN ('pending', 'in_flight')
           ORDER BY i.seq LIMIT $3::int
         ) c
         JOIN dead_letters d ON d.id = c.dead_letter_id
       ) w
       WHERE w.before < $4::bigint OR w.before = 0
     ),
     claimed AS (
       UPDATE replay_jobs SET claimed_through = (SELECT max(seq) FROM next)
       WHERE id = $1::bigint AND claimed_through < (SELECT max(seq) FROM next)
       RETURNING 1
     )
     SELECT m.seq, m.kind, m.replay_id, m.exchange, m.routing_key, m.dead_letter_id::text, d.group_id::text, d.source_id::text, coalesce(st.status, 'dead') AS row_status,
       coalesce(r.body, d.body) AS body, coalesce(r.properties, d.properties)::text AS properties_json, coalesce(r.headers::text, d.headers::text) AS headers_json,
       d.replay_count, d.lineage_origin_id, d.held_from, p.id AS pause_id, m.revision,
       CASE WHEN s.kind = 'jetstream' THEN 'jetstream' ELSE 'rabbitmq' END AS broker
     FROM next m
     JOIN dead_letters d ON d.id = m.dead_letter_id
     -- Which broker a message goes back through: its source's, never anything a message carries.
     LEFT JOIN sources s ON s.id = d.source_id
     -- The revision the job froze (docs/ARCHITECTURE.md#revisions): its message goes out instead of the original, never beside it.
     LEFT JOIN message_revisions r ON m.revision IS NOT NULL AND r.dead_letter_id = m.dead_letter_id AND r.revision = m.revision
     LEFT JOIN dead_letter_states st ON st.dead_letter_id = m.dead_letter_id
     -- The pause a message goes out under (its x-lazarus-release): a release's pause, or the open pause of a replayed
     -- message's entity. Pauses are few; most jobs have none.
     LEFT JOIN LATERAL (
       SELECT p.id::text FROM pauses p
       WHERE p.queue = CASE WHEN m.kind = 'release' THEN d.held_from ELSE d.origin_queue END
         AND (p.entity_key = d.entity_key OR p.entity_key IS NULL)
         AND (m.kind = 'release' OR p.status <> 'resumed')
       ORDER BY (p.replay_job_id = $1::bigint) DESC NULLS LAST, (p.status <> 'resumed') DESC, p.id DESC LIMIT 1
     ) p ON TRUE
     ORDER BY m.seq`,
    [options.jobId, options.afterSeq, options.limit, options.maxBytes, options.span],
    // Prepared once per connection: planning this statement costs a good part of running it (CHANGELOG.md).
    { name: 'lazarus_replay_claim_items' },
  )
  return rows
}

/** The job's last item (claims stop there). */
export async function lastSeq({ sql, jobId }: { sql: Sql; jobId: string }): Promise<number> {
  const { rows } = await sql.query<{ seq: number | null }>('SELECT max(seq) AS seq FROM replay_items WHERE job_id = $1::bigint', [jobId])
  return rows[0].seq ?? 0
}

/**
 * `groupId` and `sourceId` are the message's error group and source (from the claim; they never change), for the
 * replayed counters of the group and of the group in that source; `publishedAt` (epoch ms) is when it went to the
 * broker, absent when it was not published.
 */
export type ItemOutcome = {
  seq: number; groupId: string; sourceId: string; status: 'confirmed' | 'unroutable' | 'failed' | 'skipped'; error: string | null; publishedAt?: number
  /** A JetStream copy the stream dropped as a duplicate of an earlier run's publish (docs/jetstream.md#replay). */
  duplicate?: boolean
}

/**
 * Records a batch of outcomes in one transaction: the items, their dead letters (replayed after an ack without a
 * return; otherwise back to dead, or held for a release, with the reason), the groups' replayed counters and the
 * job's counters (published counts the items that went to the broker, once each, when their outcome is known).
 *
 * Committed without waiting for the WAL flush: losing the last batches in a database crash leaves their items in
 * flight, and they are published again with their replay ids, which is exactly what an executor crash does.
 * (claimItems, which must precede publishing, commits durably.)
 */
export async function recordOutcomes(options: { sql: Sql; jobId: string; actor: string; outcomes: ItemOutcome[]; rate: number | null }): Promise<void> {
  const { sql, outcomes } = options
  await sql.transaction(async (tx) => {
    // The generic plan: with the batch's real size a custom plan hashes the whole job's items and every replaying
    // message's state (a sequential scan of each per batch, growing with the job: CHANGELOG.md) where a primary-key
    // probe per outcome is all it needs.
    await tx.query("SELECT set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)")
    const { rows: groups } = await tx.query<{ group_id: string; source_id: string; n: number }>(
      `WITH o AS (SELECT * FROM unnest($2::int[], $3::text[], $4::text[], $7::bigint[], $8::float8[], $9::bigint[], $10::bool[]) AS o(seq, status, error, group_id, published_ms, source_id, duplicate)),
       items AS (
         UPDATE replay_items i SET status = o.status, error = o.error, finished_at = now(),
           published_at = coalesce(i.published_at, to_timestamp(o.published_ms / 1000))
         FROM o WHERE i.job_id = $1::bigint AND i.seq = o.seq AND i.status IN ('pending', 'in_flight')
         RETURNING i.dead_letter_id, i.kind, i.status, i.error, i.published_at IS NOT NULL AS published, o.group_id, o.source_id, o.duplicate
       ),
       moved AS (
         UPDATE dead_letter_states st SET
           status = CASE WHEN it.status = 'confirmed' THEN 'replayed' WHEN it.kind = 'release' THEN 'held' ELSE 'dead' END,
           status_reason = CASE WHEN it.status = 'confirmed' THEN NULL ELSE it.error END,
           status_changed_at = now(), status_changed_by = $5
         -- coalesce(): not a condition the status index can serve. Its statistics lag far behind a running job (the rows
         -- turned 'replaying' moments ago) and the planner would walk every replaying row for each outcome.
         FROM items it WHERE st.dead_letter_id = it.dead_letter_id AND coalesce(st.status, '') = 'replaying'
         RETURNING st.status, it.group_id, it.source_id
       ),
       job AS (
         UPDATE replay_jobs j SET
           published = j.published + c.published, confirmed = j.confirmed + c.confirmed, released = j.released + c.released, unroutable = j.unroutable + c.unroutable,
           failed = j.failed + c.failed, skipped = j.skipped + c.skipped, duplicates = j.duplicates + c.duplicates,
           current_rate = coalesce($6::real, j.current_rate), rate_sampled_at = CASE WHEN $6::real IS NULL THEN j.rate_sampled_at ELSE now() END,
           updated_at = now()
         FROM (SELECT
             (count(*) FILTER (WHERE published))::int AS published,
             (count(*) FILTER (WHERE status = 'confirmed' AND kind = 'replay'))::int AS confirmed,
             (count(*) FILTER (WHERE status = 'confirmed' AND kind = 'release'))::int AS released,
             (count(*) FILTER (WHERE status = 'unroutable'))::int AS unroutable,
             (count(*) FILTER (WHERE status = 'failed'))::int AS failed,
             (count(*) FILTER (WHERE status = 'skipped'))::int AS skipped,
             (count(*) FILTER (WHERE duplicate))::int AS duplicates
           FROM items) c
         WHERE j.id = $1::bigint RETURNING 1
       )
       SELECT group_id::text, source_id::text, count(*)::int AS n FROM moved WHERE status = 'replayed' GROUP BY 1, 2 ORDER BY 1, 2`,
      [
        options.jobId, outcomes.map((o) => o.seq), outcomes.map((o) => o.status), outcomes.map((o) => o.error), options.actor, options.rate,
        outcomes.map((o) => o.groupId), outcomes.map((o) => o.publishedAt ?? null), outcomes.map((o) => o.sourceId), outcomes.map((o) => o.duplicate === true),
      ],
      { name: 'lazarus_replay_record_outcomes' },
    )
    await addGroupCounts({ sql: tx, column: 'replayed_count', moved: groups })
  })
}
