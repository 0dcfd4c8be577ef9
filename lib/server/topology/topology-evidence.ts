import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

/*
 * What stored dead letters say about the topology (docs/topology.md#evidence-from-stored-letters): per queue named in
 * their x-death headers, the per-message TTLs of expired entries (`original-expiration`), the highest x-death count and
 * how many letters name it; per source, the queues its letters name, and its largest bodies; per queue the letters
 * died in, the routing keys they were published with. Bounded: the newest `lettersPerSource` letters of each source
 * within `days`, read through dead_letters_source_idx (source_id, failed_at DESC, id DESC), so a run costs the same at
 * a million stored rows as at a thousand.
 */

export type XDeathQueueEvidence = {
  queue: string
  /** Letters whose x-death names the queue. */
  letters: number
  /** The highest x-death `count` of an entry for the queue. */
  maxCount: number
  /** Distinct `original-expiration` values of `reason=expired` entries for the queue (per-message TTLs, in ms). */
  expirations: string[]
  /** Sources whose letters name the queue. */
  sourceIds: string[]
}

export type SourceEvidence = {
  sourceId: string
  /** The queue the source drains. */
  queue: string
  /** Letters read for this source. */
  letters: number
  /** Queues named by its letters' x-death entries. */
  deathQueues: string[]
  /** Letters at least `nearSizeBytes` long, and the longest body read. */
  nearSizeLetters: number
  largestBody: number
}

export type TopologyEvidence = {
  deathQueues: XDeathQueueEvidence[]
  sources: SourceEvidence[]
  /** Routing keys stored letters were published with, by the queue they died in (origin_queue). */
  routingKeys: { queue: string; keys: string[] }[]
  /** Per-message expirations of an opt-in sample of live classic queues (sample-queue-ttls.ts); null: no expiration. */
  samples: { queue: string; expirations: (string | null)[] }[]
  window: { days: number; lettersPerSource: number; nearSizeBytes: number }
}

/** No stored letters: what diagnose gets when there is no database (or nothing drained yet). */
export const emptyEvidence = (): TopologyEvidence => ({
  deathQueues: [],
  sources: [],
  routingKeys: [],
  samples: [],
  window: { days: 0, lettersPerSource: 0, nearSizeBytes: 0 },
})

/** 90% of RabbitMQ 4.x's default max_message_size (16 MiB), the lowest default (docs/rabbitmq.md#size-limits). */
export const DEFAULT_NEAR_SIZE_BYTES = Math.floor(0.9 * 16 * 1024 * 1024)

// The newest letters of each source, by the source index; OFFSET 0 keeps the planner from flattening the lateral
// subquery into a scan of the whole table.
const RECENT = `
  recent AS MATERIALIZED (
    SELECT d.id, d.source_id, d.headers, d.body_size, d.origin_queue, d.origin_routing_keys
    FROM unnest($1::bigint[]) AS s(id)
    CROSS JOIN LATERAL (
      SELECT id, source_id, headers, body_size, origin_queue, origin_routing_keys FROM dead_letters
      WHERE source_id = s.id AND failed_at >= now() - make_interval(days => $2::int)
      ORDER BY failed_at DESC, id DESC LIMIT $3 OFFSET 0
    ) d
  )`

// x-death is the stored header's typed array of tables (docs/rabbitmq.md#typed-headers): {"t":"A","v":[{"t":"F","v":{…}}]}.
const DEATHS = `
  deaths AS MATERIALIZED (
    SELECT r.id, r.source_id, e -> 'v' -> 'queue' ->> 'v' AS queue, e -> 'v' -> 'reason' ->> 'v' AS reason,
           e -> 'v' -> 'count' ->> 'v' AS count, e -> 'v' -> 'original-expiration' ->> 'v' AS expiration
    FROM recent r
    CROSS JOIN LATERAL json_array_elements(
      CASE WHEN json_typeof(r.headers) = 'object' AND json_typeof(r.headers -> 'x-death' -> 'v') = 'array' THEN r.headers -> 'x-death' -> 'v' END
    ) e
    WHERE json_typeof(e -> 'v') = 'object'
  )`

type DeathRow = { queue: string; letters: number; max_count: string | null; expirations: string[] | null; source_ids: string[] }
type SourceRow = { source_id: string; queue: string; letters: number; death_queues: string[] | null; near_size: number; largest: number | null }
type KeysRow = { queue: string; keys: string[] }

/** Reads the evidence for one vhost's sources from the stored letters. */
export async function readTopologyEvidence(options: {
  sql: Sql
  vhost: string
  /** How far back to look (default 7 days). */
  days?: number
  /** At most this many of each source's newest letters (default 5,000). */
  lettersPerSource?: number
  nearSizeBytes?: number
  samples?: TopologyEvidence['samples']
}): Promise<TopologyEvidence> {
  const days = options.days ?? 7
  const lettersPerSource = options.lettersPerSource ?? 5_000
  const nearSizeBytes = options.nearSizeBytes ?? DEFAULT_NEAR_SIZE_BYTES
  const { rows: sources } = await options.sql.query<{ id: string; queue: string }>('SELECT id::text, queue FROM sources WHERE vhost = $1 ORDER BY id', [options.vhost])
  const window = { days, lettersPerSource, nearSizeBytes }
  if (sources.length === 0) return { ...emptyEvidence(), samples: options.samples ?? [], window }
  // One statement: the newest letters and their x-death entries are read once (MATERIALIZED), then summed three ways.
  const { rows } = await options.sql.query<{ deaths: DeathRow[] | null; sources: SourceRow[] | null; keys: KeysRow[] | null }>(
    `WITH ${RECENT}, ${DEATHS}
     SELECT
       (SELECT json_agg(x ORDER BY x.queue) FROM (
          SELECT queue, count(DISTINCT id)::int AS letters,
                 max(CASE WHEN count ~ '^[0-9]{1,18}$' THEN count::bigint END)::text AS max_count,
                 array_agg(DISTINCT expiration ORDER BY expiration) FILTER (WHERE reason = 'expired' AND expiration IS NOT NULL) AS expirations,
                 array_agg(DISTINCT source_id::text) AS source_ids
          FROM deaths WHERE queue IS NOT NULL GROUP BY queue) x) AS deaths,
       (SELECT json_agg(x ORDER BY x.source_id::bigint) FROM (
          SELECT s.id::text AS source_id, count(r.id)::int AS letters,
                 (SELECT array_agg(DISTINCT d.queue ORDER BY d.queue) FROM deaths d WHERE d.source_id = s.id AND d.queue IS NOT NULL) AS death_queues,
                 count(r.id) FILTER (WHERE r.body_size >= $4)::int AS near_size, max(r.body_size) AS largest
          FROM unnest($1::bigint[]) AS s(id) LEFT JOIN recent r ON r.source_id = s.id GROUP BY s.id) x) AS sources,
       (SELECT json_agg(x ORDER BY x.queue) FROM (
          SELECT r.origin_queue AS queue, array_agg(DISTINCT k ORDER BY k) AS keys
          FROM recent r CROSS JOIN LATERAL unnest(r.origin_routing_keys) AS k
          WHERE r.origin_queue IS NOT NULL GROUP BY r.origin_queue) x) AS keys`,
    [sources.map((s) => s.id), days, lettersPerSource, nearSizeBytes],
  )
  const deaths = rows[0].deaths ?? []
  const perSource = rows[0].sources ?? []
  const keys = rows[0].keys ?? []
  const queueOf = new Map(sources.map((s) => [s.id, s.queue]))
  return {
    deathQueues: deaths.map((r) => ({ queue: r.queue, letters: r.letters, maxCount: Number(r.max_count ?? 0), expirations: r.expirations ?? [], sourceIds: r.source_ids })),
    sources: perSource.map((r) => ({
      sourceId: r.source_id,
      queue: queueOf.get(r.source_id) ?? '',
      letters: r.letters,
      deathQueues: r.death_queues ?? [],
      nearSizeLetters: r.near_size,
      largestBody: r.largest ?? 0,
    })),
    routingKeys: keys,
    samples: options.samples ?? [],
    window,
  }
}
