import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

/*
 * What Lazarus has stored about JetStream failures that the server cannot say (docs/jetstream.md#the-doctors-jetstream-findings):
 * terminated failures whose message the stream had already removed (flagged `message-gone` by the capture,
 * lib/server/ingest/build-jetstream-row.ts), per stream and consumer. Bounded as the RabbitMQ evidence is
 * (topology-evidence.ts): each source's newest `lettersPerSource` letters within `days`, through dead_letters_source_idx.
 */

/** A JetStream source: a stream and one of its consumers, or all of them (`consumer` null). */
export type JetStreamSourceRef = { id: string; stream: string; consumer: string | null }

export type GoneTerminations = { stream: string; consumer: string; sourceId: string; count: number; newestAt: string }

export type JetStreamEvidence = {
  goneTerminations: GoneTerminations[]
  window: { days: number; lettersPerSource: number }
}

export const emptyJetStreamEvidence = (): JetStreamEvidence => ({ goneTerminations: [], window: { days: 0, lettersPerSource: 0 } })

export async function readJetStreamSources({ sql }: { sql: Sql }): Promise<JetStreamSourceRef[]> {
  const { rows } = await sql.query<JetStreamSourceRef>(`SELECT id::text, stream, consumer FROM sources WHERE kind = 'jetstream' AND enabled ORDER BY id`)
  return rows
}

export async function readJetStreamEvidence(options: { sql: Sql; sources: readonly JetStreamSourceRef[]; days?: number; lettersPerSource?: number }): Promise<JetStreamEvidence> {
  const days = options.days ?? 7
  const lettersPerSource = options.lettersPerSource ?? 5_000
  const window = { days, lettersPerSource }
  if (options.sources.length === 0) return { goneTerminations: [], window }
  // OFFSET 0 keeps the planner from flattening the lateral subquery into a scan of the whole table.
  const { rows } = await options.sql.query<{ stream: string; consumer: string; source_id: string; n: number; newest: Date }>(
    `SELECT d.properties ->> 'stream' AS stream, d.properties ->> 'consumer' AS consumer, s.id::text AS source_id, count(*)::int AS n, max(d.failed_at) AS newest
     FROM unnest($1::bigint[]) AS s(id)
     CROSS JOIN LATERAL (
       SELECT properties, flags, death_reason, failed_at FROM dead_letters
       WHERE source_id = s.id AND failed_at >= now() - make_interval(days => $2::int)
       ORDER BY failed_at DESC, id DESC LIMIT $3 OFFSET 0
     ) d
     WHERE d.death_reason = 'terminated' AND 'message-gone' = ANY(d.flags)
       AND d.properties ->> 'stream' IS NOT NULL AND d.properties ->> 'consumer' IS NOT NULL
     GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    [options.sources.map((s) => s.id), days, lettersPerSource],
  )
  return {
    goneTerminations: rows.map((r) => ({ stream: r.stream, consumer: r.consumer, sourceId: r.source_id, count: r.n, newestAt: new Date(r.newest).toISOString() })),
    window,
  }
}
