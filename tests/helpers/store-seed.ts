import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'
import type { Sql } from '@/lib/server/platform/db/sql'
import { insertReplayJob, recordJobSources, takeMessagesIntoJob } from '@/lib/server/replay/replay-store'
import type { ReplayPlanDto } from '@/lib/shared/schemas/replay'
import { ingestRow } from './ingest-row'

/**
 * Seeds for the store tests (tests/stores/), written through the stores themselves where one exists: messages through
 * the drainer's storeBatch, jobs through the replay store.
 */

let serial = 0

/** A DLQ source (or a hold source, `kind: 'hold'`); its id. */
export async function insertSource(sql: Sql, options: { queue?: string; vhost?: string; kind?: 'dlq' | 'hold'; entityVersion?: unknown } = {}): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO sources (vhost, queue, kind, entity_version) VALUES ($1, $2, $3, $4::jsonb) RETURNING id::text`,
    [options.vhost ?? '/', options.queue ?? `store.test.${serial++}.dlq`, options.kind ?? 'dlq', options.entityVersion === undefined ? null : JSON.stringify(options.entityVersion)],
  )
  return rows[0].id
}

/** Stores one batch of `rows` (ingestRow defaults, each overridable) for the source; the new rows' ids in id order. */
export async function storeRows(sql: Sql, sourceId: string, rows: Partial<IngestRow>[]): Promise<string[]> {
  const { rows: before } = await sql.query<{ id: string | null }>('SELECT max(id)::text AS id FROM dead_letters')
  await storeBatch({ sql, sourceId, sourceLabel: `source-${sourceId}`, rows: rows.map((r) => ingestRow(r)) })
  const { rows: stored } = await sql.query<{ id: string }>(
    'SELECT id::text FROM dead_letters WHERE source_id = $1::bigint AND id > $2::bigint ORDER BY dead_letters.id',
    [sourceId, before[0].id ?? '0'],
  )
  return stored.map((r) => r.id)
}

/** The plan a job records; the stores only keep it. */
export const PLAN: ReplayPlanDto = {
  matched: 0, replayable: 0, excluded: [], target: { type: 'queue' }, targets: [], entities: { count: 0, orderSensitive: 0, sources: [] },
  pauseEntities: false, ratePerSecond: 100, estimatedSeconds: 0, warnings: [], canRun: true, confirmCount: null, largeJobMessages: 10_000,
  editedMessages: 0, approval: { required: false, reasons: [] },
}

/** What createReplay hands the store for an ids selection sent to the queues the messages failed in. */
export const plannedIds = (ids: string[]) => ({
  params: [ids],
  eligibleWhere: `d.id = ANY($1::bigint[]) AND coalesce(st.status, 'dead') = 'dead'`,
  exchangeSql: `''`,
  routingKeySql: `coalesce(d.origin_queue, '')`,
})

/** A pending replay job taking the dead messages of `ids` (as createReplay does); its id and how many it took. */
export async function replayJobOf(sql: Sql, ids: string[], actor = 'store-test'): Promise<{ jobId: string; taken: number }> {
  return sql.transaction(async (tx) => {
    const jobId = await insertReplayJob({ sql: tx, job: { status: 'pending', selection: { ids }, target: { type: 'queue' }, plan: PLAN, actor } })
    const taken = await takeMessagesIntoJob({ sql: tx, planned: plannedIds(ids), jobId, actor })
    await tx.query('UPDATE replay_jobs SET total = $2 WHERE id = $1::bigint', [jobId, taken])
    await recordJobSources({ sql: tx, jobId })
    return { jobId, taken }
  })
}

/** Message statuses by id (no status row: dead). */
export async function statusesOf(sql: Sql, ids: string[]): Promise<string[]> {
  const { rows } = await sql.query<{ status: string }>(
    `SELECT coalesce(st.status, 'dead') AS status FROM unnest($1::bigint[]) WITH ORDINALITY AS i(id, n)
     LEFT JOIN dead_letter_states st ON st.dead_letter_id = i.id ORDER BY i.n`,
    [ids],
  )
  return rows.map((r) => r.status)
}
