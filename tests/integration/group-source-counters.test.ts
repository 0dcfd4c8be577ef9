import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'
import { resolveMessages } from '@/lib/server/messages/resolve-messages'
import { claimItems, recordOutcomes } from '@/lib/server/engines/replay-executor/job-store'
import { runRetention } from '@/lib/server/engines/retention/run-retention'
import { deleteSource } from '@/lib/server/sources/delete-source'
import { ingestRow } from '../helpers/ingest-row'
import { freezeJob as freezeReplayJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'

const MINUTE = 60_000

/**
 * The per-(group, source) counters and arrival buckets (migration 20261205200000_group_source_counters) against the
 * truth: after ingestion (concurrent batches of two sources into shared groups, duplicates, held rows), replay,
 * release, resolve and retention, every counter equals a COUNT over dead_letters, and the per-group counters equal
 * the sums of their per-source rows.
 */
describe('group counters per source', () => {
  let db: TestDb
  const source = { a: '', b: '', c: '' }
  const base = Date.now() - 30 * MINUTE

  type Pair = { group: string; source: string; count: number; replayed: number; resolved: number }

  /** Each group_source_stats row, and what dead_letters says it should hold (0 for a pair with no message left). */
  async function storedAndTruth(): Promise<{ stored: Pair[]; truth: Pair[] }> {
    const { rows: stored } = await db.sql.query<Pair>(
      `SELECT group_id::text AS group, source_id::text AS source, count::int AS count, replayed_count::int AS replayed, resolved_count::int AS resolved
       FROM group_source_stats ORDER BY group_id, source_id`,
    )
    const { rows: truth } = await db.sql.query<Pair>(
      `SELECT p.group_id::text AS group, p.source_id::text AS source, count(d.id)::int AS count,
         (count(*) FILTER (WHERE st.status = 'replayed'))::int AS replayed, (count(*) FILTER (WHERE st.status = 'resolved'))::int AS resolved
       FROM (SELECT group_id, source_id FROM group_source_stats UNION SELECT group_id, source_id FROM dead_letters) p
       LEFT JOIN dead_letters d ON d.group_id = p.group_id AND d.source_id = p.source_id
       LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id
       GROUP BY p.group_id, p.source_id ORDER BY p.group_id, p.source_id`,
    )
    return { stored, truth }
  }

  /** Every per-source counter is what is stored, and every group's counters are the sums of its sources'. */
  async function expectCountersTrue(): Promise<Pair[]> {
    const { stored, truth } = await storedAndTruth()
    expect(stored).toEqual(truth)
    const { rows: groups } = await db.sql.query<{ id: string; count: number; replayed: number; resolved: number; sums: number[] }>(
      `SELECT g.id::text, g.count::int, g.replayed_count::int AS replayed, g.resolved_count::int AS resolved,
         ARRAY[sum(s.count), sum(s.replayed_count), sum(s.resolved_count)]::int[] AS sums
       FROM error_groups g JOIN group_source_stats s ON s.group_id = g.id GROUP BY g.id ORDER BY g.id`,
    )
    for (const g of groups) expect([g.id, g.count, g.replayed, g.resolved]).toEqual([g.id, ...g.sums])
    return stored
  }

  /** First and last failure, facets and per-minute buckets of each pair, from the messages themselves. */
  async function expectFacetsAndBucketsTrue(): Promise<void> {
    const { rows: facets } = await db.sql.query<{ stored: unknown; truth: unknown }>(
      `SELECT to_jsonb(s) - 'count' - 'replayed_count' - 'resolved_count' AS stored,
         jsonb_build_object('group_id', t.group_id, 'source_id', t.source_id, 'first_seen', t.first_seen, 'last_seen', t.last_seen,
           'services', t.services, 'service_versions', t.service_versions, 'failure_kinds', t.failure_kinds) AS truth
       FROM group_source_stats s FULL JOIN (
         SELECT group_id, source_id, min(failed_at) AS first_seen, max(failed_at) AS last_seen,
           coalesce(array_agg(DISTINCT service ORDER BY service) FILTER (WHERE service IS NOT NULL), '{}') AS services,
           coalesce(array_agg(DISTINCT service_version ORDER BY service_version) FILTER (WHERE service_version IS NOT NULL), '{}') AS service_versions,
           array_agg(DISTINCT failure_kind ORDER BY failure_kind) AS failure_kinds
         FROM dead_letters GROUP BY 1, 2
       ) t ON t.group_id = s.group_id AND t.source_id = s.source_id`,
    )
    expect(facets.length).toBeGreaterThan(0)
    for (const f of facets) expect(f.stored).toEqual(f.truth)
    const buckets = async (sql: string) => (await db.sql.query<{ key: string; n: number }>(sql)).rows
    expect(await buckets(`SELECT concat_ws(' ', group_id, source_id, minute) AS key, count AS n FROM group_source_arrivals ORDER BY 1`)).toEqual(
      await buckets(`SELECT concat_ws(' ', group_id, source_id, date_trunc('minute', failed_at)) AS key, count(*)::int AS n FROM dead_letters GROUP BY 1 ORDER BY 1`),
    )
    // A group's own first and last failure and facets are those of its sources together.
    const { rows: groups } = await db.sql.query<{ own: unknown; merged: unknown }>(
      `SELECT jsonb_build_array(g.first_seen, g.last_seen, g.services, g.service_versions, g.failure_kinds) AS own,
         jsonb_build_array(min(s.first_seen), max(s.last_seen),
           ARRAY(SELECT DISTINCT v FROM group_source_stats x, unnest(x.services) v WHERE x.group_id = g.id ORDER BY 1),
           ARRAY(SELECT DISTINCT v FROM group_source_stats x, unnest(x.service_versions) v WHERE x.group_id = g.id ORDER BY 1),
           ARRAY(SELECT DISTINCT v FROM group_source_stats x, unnest(x.failure_kinds) v WHERE x.group_id = g.id ORDER BY 1)) AS merged
       FROM error_groups g JOIN group_source_stats s ON s.group_id = g.id GROUP BY g.id`,
    )
    for (const g of groups) expect(g.own).toEqual(g.merged)
    // The per-group buckets are the per-source ones added up.
    expect(await buckets(`SELECT concat_ws(' ', group_id, minute) AS key, count AS n FROM group_arrivals ORDER BY 1`)).toEqual(
      await buckets(`SELECT concat_ws(' ', group_id, minute) AS key, sum(count)::int AS n FROM group_source_arrivals GROUP BY 1 ORDER BY 1`),
    )
  }

  const groupOf = async (signature: string) => (await db.sql.query<{ id: string }>('SELECT id::text FROM error_groups WHERE signature = $1', [signature])).rows[0].id
  const idsWhere = async (where: string, params: unknown[] = []) =>
    (await db.sql.query<{ id: string }>(`SELECT d.id::text FROM dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id WHERE ${where} ORDER BY d.id`, params)).rows.map((r) => r.id)

  const freezeJob = (kind: 'replay' | 'release', ids: string[]) => freezeReplayJob({ sql: db.sql, kind, ids, actor: 'counters-test' })

  /** Publishes nothing: claims the job's items and records `confirm(seq)` ? confirmed : failed for each. */
  async function settleJob(jobId: string, confirm: (seq: number) => boolean): Promise<void> {
    const items = await claimItems({ sql: db.sql, jobId, afterSeq: 0, span: 10_000, limit: 10_000, maxBytes: 64 * 1024 * 1024 })
    await recordOutcomes({
      sql: db.sql,
      jobId, actor: 'counters-test', rate: null,
      outcomes: items.map((i) => ({
        seq: i.seq, groupId: i.group_id, sourceId: i.source_id, status: confirm(i.seq) ? 'confirmed' as const : 'failed' as const,
        error: confirm(i.seq) ? null : 'nacked by the broker', publishedAt: Date.now(),
      })),
    })
  }

  beforeAll(async () => {
    db = await createTestDb()
    for (const key of ['a', 'b', 'c'] as const) {
      source[key] = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ($1) RETURNING id::text`, [`counters.${key}.dlq`])).rows[0].id
    }
  })
  afterAll(async () => db?.drop())

  // Rows over three minutes, with a facet value per source and per batch, so the arrays and buckets have something to merge.
  const row = (key: 'a' | 'b' | 'c', signature: string, i: number, overrides: Partial<IngestRow> = {}) =>
    ingestRow({
      signature, title: signature, failedAt: new Date(base + (i % 3) * MINUTE + i * 1000),
      service: `svc-${key}`, serviceVersion: `${key}-${i % 2}`, failureKind: i % 4 === 0 ? 'transient' : 'invalid', ...overrides,
    })

  it('ingestion keeps each (group, source) counter and bucket equal to what it stored, batches of two sources racing', async () => {
    const batches: Promise<unknown>[] = []
    const sent: IngestRow[] = []
    for (let batch = 0; batch < 6; batch++) {
      for (const key of ['a', 'b'] as const) {
        const rows = Array.from({ length: 30 }, (_, i) => row(key, i % 3 === 0 ? `v1:counters-${key}` : 'v1:counters-shared', batch * 30 + i))
        sent.push(...rows)
        batches.push(storeBatch({ sql: db.sql, sourceId: source[key], sourceLabel: `counters.${key}.dlq`, rows }))
      }
    }
    await Promise.all(batches)
    // Copies of stored messages: redelivered or seen again, never counted twice.
    const again = sent.filter((r) => r.signature === 'v1:counters-shared').slice(0, 10)
    const [copies] = await Promise.all([
      storeBatch({ sql: db.sql, sourceId: source.a, sourceLabel: 'counters.a.dlq', rows: again.map((r) => ({ ...r, redelivered: true })) }),
      // A batch with a duplicate inside it, and a held message: stored one status at a time, counted once each.
      storeBatch({
        sql: db.sql,
        sourceId: source.b, sourceLabel: 'counters.b.dlq',
        rows: (() => {
          const fresh = row('b', 'v1:counters-shared', 500, { serviceVersion: 'b-new', failureKind: 'expired' })
          return [fresh, { ...fresh }, row('b', 'v1:counters-shared', 501, { status: 'held' })]
        })(),
      }),
    ])
    expect(copies).toEqual({ inserted: 0, duplicates: 10 })

    const stored = await expectCountersTrue()
    await expectFacetsAndBucketsTrue()
    const shared = await groupOf('v1:counters-shared')
    expect(stored.filter((p) => p.group === shared).map((p) => [p.source, p.count])).toEqual([[source.a, 120], [source.b, 122]])
    expect(stored.filter((p) => p.group !== shared).map((p) => p.count)).toEqual([60, 60])
  })

  it('replays and releases count the confirmed messages in their group and source, failed ones not', async () => {
    const shared = await groupOf('v1:counters-shared')
    const ids = await idsWhere(`d.group_id = $1 AND st.dead_letter_id IS NULL AND d.id % 5 = 0`, [shared])
    expect(new Set((await db.sql.query<{ s: string }>('SELECT DISTINCT source_id::text AS s FROM dead_letters WHERE id = ANY($1::bigint[])', [ids])).rows.map((r) => r.s)).size).toBe(2)
    await settleJob(await freezeJob('replay', ids), (seq) => seq % 3 !== 0)
    const held = await idsWhere(`st.status = 'held'`)
    expect(held).toHaveLength(1)
    await settleJob(await freezeJob('release', held), () => true)

    const stored = await expectCountersTrue()
    expect(stored.reduce((sum, p) => sum + p.replayed, 0)).toBe(ids.filter((_, i) => (i + 1) % 3 !== 0).length + 1)
  })

  it('resolving messages (by ids and by group) counts them in their group and source', async () => {
    const a = await groupOf('v1:counters-a')
    const some = await idsWhere(`d.source_id = $1 AND st.dead_letter_id IS NULL AND d.id % 4 = 1`, [source.b])
    const byIds = await resolveMessages({ db, input: { selection: { ids: some }, reason: 'fixed upstream' }, actor: 'ann' })
    expect(byIds.resolved).toBe(some.length)
    const byGroup = await resolveMessages({ db, input: { selection: { groupId: a }, reason: 'known' }, actor: 'ann' })
    expect(byGroup.resolved).toBe(60)
    const stored = await expectCountersTrue()
    expect(stored.find((p) => p.group === a)).toMatchObject({ source: source.a, count: 60, resolved: 60 })
  })

  it('retention lowers the counters of each group and source by what it deleted, and keeps the buckets', async () => {
    await db.sql.query(`UPDATE dead_letter_states SET status_changed_at = now() - interval '40 days' WHERE status IN ('replayed', 'resolved') AND dead_letter_id % 2 = 0`)
    const bucketsBefore = (await db.sql.query<{ n: number }>('SELECT sum(count)::int AS n FROM group_source_arrivals')).rows[0].n
    const result = await runRetention({ db, days: 30, batchSize: 7 })
    expect(result.deleted).toBeGreaterThan(20)
    const stored = await expectCountersTrue()
    expect(stored.reduce((sum, p) => sum + p.count, 0)).toBe(bucketsBefore - result.deleted)
    expect((await db.sql.query<{ n: number }>('SELECT sum(count)::int AS n FROM group_source_arrivals')).rows[0].n).toBe(bucketsBefore)
  })

  it('deleting a source that stores nothing any more removes its counters and buckets', async () => {
    await storeBatch({ sql: db.sql, sourceId: source.c, sourceLabel: 'counters.c.dlq', rows: [0, 1, 2].map((i) => row('c', 'v1:counters-shared', 900 + i)) })
    const mine = await idsWhere('d.source_id = $1', [source.c])
    await resolveMessages({ db, input: { selection: { ids: mine }, reason: 'noise' }, actor: 'ann' })
    await db.sql.query(`UPDATE dead_letter_states SET status_changed_at = now() - interval '40 days' WHERE dead_letter_id = ANY($1::bigint[])`, [mine])
    await runRetention({ db, days: 30 })
    await expectCountersTrue()
    const count = async (table: string) => (await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE source_id = $1::bigint`, [source.c])).rows[0].n
    expect([await count('group_source_stats'), await count('group_source_arrivals')]).toEqual([1, 3])
    await deleteSource({ db, id: source.c, actor: 'admin@lazarus.test' })
    expect([await count('group_source_stats'), await count('group_source_arrivals')]).toEqual([0, 0])
    expect((await storedAndTruth()).stored.length).toBe(4)
  })
})
