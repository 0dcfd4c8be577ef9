import 'server-only'
import { randomUUID } from 'node:crypto'
import { getConfig } from '@/lib/server/platform/config'
import type { Sql } from '@/lib/server/platform/db/sql'
import { DEFAULT_LARGE_JOB_MESSAGES } from '@/lib/shared/schemas/replay-confirm'
import type { ReplayPlanDto } from '@/lib/shared/schemas/replay'
import type { ReplayJobCreatedStatus } from '@/lib/shared/replay-job-machine'
import { HELD_UNEXPECTED_FLAG } from './held-row'

export type HeldRow = { id: string; held_from: string; entity_key: string | null }

/**
 * SQL (over dead_letters d, sources s): no open pause other than the ones `isOurs` (a condition on pauses o) covers the
 * held row. A row held under two pauses (an entity pause and a whole-queue pause of the same queue) goes back only when
 * the last of them ends: released earlier, it would pass the guards while the other pause still holds its entity.
 */
export function notCoveredByOtherPause(isOurs: string): string {
  return `NOT EXISTS (SELECT 1 FROM pauses o WHERE o.status <> 'resumed' AND NOT (${isOurs})
    AND o.vhost = s.vhost AND o.queue = d.held_from AND (o.entity_key IS NULL OR o.entity_key = d.entity_key))`
}

/**
 * Takes held rows (status held → replaying) matching `where` (over dead_letters d, its status st and sources s, the hold
 * source), oldest first. Rows another transaction is taking are skipped, and the status re-check under the row
 * lock means a held row is released by exactly one job. Every release (a resume, a replay's pauses, the straggler
 * sweep) takes its rows here, so none ever sends back a row flagged held-unexpected: no pause explains it, and its
 * held_from may be any queue a forger chose.
 */
export async function claimHeldRows({ sql: tx, ...options }: { sql: Sql; where: string; params: unknown[]; actor: string; limit?: number }): Promise<HeldRow[]> {
  const actorParam = options.params.length + 1
  const limitParam = options.params.length + 2
  const { rows } = await tx.query<HeldRow>(
    `WITH picked AS (
       SELECT d.id, d.held_from, d.entity_key
       FROM dead_letter_states st JOIN dead_letters d ON d.id = st.dead_letter_id JOIN sources s ON s.id = d.source_id AND s.kind = 'hold'
       WHERE st.status = 'held' AND d.held_from IS NOT NULL AND NOT ('${HELD_UNEXPECTED_FLAG}' = ANY (d.flags)) AND (${options.where})
       ORDER BY d.id LIMIT $${limitParam}
       FOR UPDATE OF st SKIP LOCKED
     )
     UPDATE dead_letter_states st SET status = 'replaying', status_reason = NULL, status_changed_at = now(), status_changed_by = $${actorParam}
     FROM picked WHERE st.dead_letter_id = picked.id AND st.status = 'held'
     RETURNING picked.id::text, picked.held_from, picked.entity_key`,
    [...options.params, options.actor, options.limit ?? 100_000],
  )
  // RETURNING has no order: release order is arrival order, which is id order.
  return rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))
}

/** Appends release items (default exchange, routing key = the queue the message was held from) after a job's last item. */
export async function insertReleaseItems({ sql: tx, jobId, rows }: { sql: Sql; jobId: string; rows: HeldRow[] }): Promise<number> {
  if (rows.length === 0) return 0
  const { rows: last } = await tx.query<{ seq: number }>('SELECT coalesce(max(seq), 0)::int AS seq FROM replay_items WHERE job_id = $1::bigint', [jobId])
  await tx.query(
    `INSERT INTO replay_items (job_id, seq, dead_letter_id, kind, replay_id, status, exchange, routing_key)
     SELECT $1::bigint, $2::int + t.n::int, t.id, 'release', t.replay_id, 'pending', '', t.queue
     FROM unnest($3::bigint[], $4::text[], $5::text[]) WITH ORDINALITY AS t(id, replay_id, queue, n)`,
    [jobId, last[0].seq, rows.map((r) => r.id), rows.map(() => randomUUID()), rows.map((r) => r.held_from)],
  )
  await tx.query('UPDATE replay_jobs SET total = total + $2::int, updated_at = now() WHERE id = $1::bigint', [jobId, rows.length])
  return rows.length
}

/** A plan for a release job, in the shape replay jobs carry (the UI shows it like any other). */
function releasePlan(rows: HeldRow[], rate: number): ReplayPlanDto {
  const perQueue = new Map<string, number>()
  for (const r of rows) perQueue.set(r.held_from, (perQueue.get(r.held_from) ?? 0) + 1)
  const entities = new Set(rows.map((r) => `${r.held_from}\u0000${r.entity_key ?? ''}`))
  return {
    matched: rows.length,
    replayable: rows.length,
    excluded: [],
    target: { type: 'queue' },
    targets: [...perQueue].map(([queue, messages]) => ({
      exchange: '', routingKey: queue, messages, exists: null, queues: 1, queueNames: [queue], alternateExchange: null, fansOut: false,
    })),
    entities: { count: entities.size, orderSensitive: 0, sources: [] },
    pauseEntities: false,
    ratePerSecond: rate,
    estimatedSeconds: Math.ceil(rows.length / rate),
    warnings: [],
    canRun: true,
    editedMessages: 0,
    approval: { required: false, reasons: [] },
    confirmCount: null,
    largeJobMessages: DEFAULT_LARGE_JOB_MESSAGES,
  }
}

/**
 * Creates a kind='release' job that sends held messages back to the queues they were held from, in arrival
 * order; the replay executor runs it like any job. Returns null (and creates nothing) when there is nothing held.
 */
export async function createReleaseJob({ sql: tx, ...options }: { sql: Sql; rows: HeldRow[]; actor: string }): Promise<string | null> {
  const { rows, actor } = options
  if (rows.length === 0) return null
  const rate = getConfig().LAZARUS_REPLAY_DEFAULT_RATE
  // Created ready to run (lib/shared/replay-job-machine.ts): a release needs no approval and waits for no start time.
  const status: ReplayJobCreatedStatus = 'pending'
  const { rows: job } = await tx.query<{ id: string }>(
    `INSERT INTO replay_jobs (kind, status, selection, target, rate_per_second, pause_entities, plan, total, created_by)
     VALUES ('release', $6, $1::jsonb, $2::jsonb, $3, false, $4::jsonb, 0, $5) RETURNING id::text`,
    [JSON.stringify({ ids: rows.map((r) => r.id) }), JSON.stringify({ type: 'queue' }), rate, JSON.stringify(releasePlan(rows, rate)), actor, status],
  )
  await insertReleaseItems({ sql: tx, jobId: job[0].id, rows })
  return job[0].id
}
