import 'server-only'
import type { Sql } from '@/lib/server/db/sql'

/** One normalised delivery, ready for the database. JSON columns arrive serialised. */
export type IngestRow = {
  fingerprint: Buffer
  redelivered: boolean
  body: Buffer
  bodyEncoding: 'json' | 'text' | 'binary'
  bodyPreview: string | null
  propertiesJson: string
  headersJson: string
  xDeathJson: string | null
  deliveryExchange: string
  deliveryRoutingKey: string
  deathReason: string | null
  attempts: number | null
  originExchange: string | null
  originRoutingKeys: string[]
  originQueue: string | null
  firstDeathAt: Date | null
  lastDeathAt: Date | null
  failedAt: Date
  errorType: string | null
  errorMessage: string | null
  errorStack: string | null
  failureKind: string
  service: string | null
  serviceVersion: string | null
  framework: string
  entityKey: string | null
  signature: string
  title: string
  messagePattern: string | null
  flags: string[]
  lineageOriginId: string | null
  replayCount: number
  status: 'dead' | 'held'
}

export type StoreBatchResult = { inserted: number; duplicates: number }

/**
 * Merges rows that share a fingerprint inside one batch: ON CONFLICT cannot touch the same row twice
 * in one statement. Distinct non-redelivered copies still count as "seen again".
 */
export function collapseDuplicates(rows: IngestRow[]): { rows: IngestRow[]; extraSeen: Map<string, number> } {
  const byFingerprint = new Map<string, IngestRow>()
  const extraSeen = new Map<string, number>()
  for (const row of rows) {
    const key = row.fingerprint.toString('hex')
    const first = byFingerprint.get(key)
    if (!first) {
      byFingerprint.set(key, row)
    } else if (!row.redelivered) {
      extraSeen.set(key, (extraSeen.get(key) ?? 0) + 1)
    }
  }
  return { rows: [...byFingerprint.values()], extraSeen }
}

const UPSERT_GROUPS = `
INSERT INTO error_groups (signature, title, error_type, message_pattern, first_seen, last_seen)
SELECT DISTINCT ON (signature) signature, title, error_type, message_pattern, failed_at, failed_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
  AS t(signature, title, error_type, message_pattern, failed_at)
ORDER BY signature
ON CONFLICT (signature) DO NOTHING`

// One statement stores the rows, then maintains the group counters, the per-minute arrival buckets and the
// source's drained count from the rows that were really new ((xmax = 0) is true only for inserted tuples).
const INSERT_DEAD_LETTERS = `
WITH input AS (
  SELECT * FROM unnest(
    $2::bytea[], $3::boolean[], $4::bytea[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
    $10::text[], $11::text[], $12::text[], $13::int[], $14::text[], $15::text[], $16::text[],
    $17::timestamptz[], $18::timestamptz[], $19::timestamptz[], $20::text[], $21::text[], $22::text[],
    $23::text[], $24::text[], $25::text[], $26::text[], $27::text[], $28::text[], $29::text[], $30::text[],
    $31::int[], $32::text[], $33::int[]
  ) AS t(fingerprint, redelivered, body, body_encoding, body_preview, properties, headers, x_death,
         delivery_exchange, delivery_routing_key, death_reason, attempts, origin_exchange, origin_routing_keys, origin_queue,
         first_death_at, last_death_at, failed_at, error_type, error_message, error_stack,
         failure_kind, service, service_version, framework, entity_key, signature, flags, lineage_origin_id,
         replay_count, status, extra_seen)
),
stored AS (
  INSERT INTO dead_letters (
    source_id, fingerprint, seen_count, redelivered, body, body_size, body_encoding, body_preview, properties, headers, x_death,
    delivery_exchange, delivery_routing_key, death_reason, attempts, origin_exchange, origin_routing_keys, origin_queue,
    first_death_at, last_death_at, failed_at, error_type, error_message, error_stack,
    failure_kind, service, service_version, framework, entity_key, group_id, flags, lineage_origin_id, replay_count, status)
  SELECT $1::bigint, i.fingerprint, 1 + i.extra_seen, i.redelivered, i.body, octet_length(i.body), i.body_encoding, i.body_preview,
    i.properties::jsonb, i.headers::json, i.x_death::json,
    i.delivery_exchange, i.delivery_routing_key, i.death_reason, i.attempts, i.origin_exchange,
    ARRAY(SELECT jsonb_array_elements_text(i.origin_routing_keys::jsonb)), i.origin_queue,
    i.first_death_at, i.last_death_at, i.failed_at, i.error_type, i.error_message, i.error_stack,
    i.failure_kind, i.service, i.service_version, i.framework, i.entity_key, g.id,
    ARRAY(SELECT jsonb_array_elements_text(i.flags::jsonb)), i.lineage_origin_id, i.replay_count, i.status
  FROM input i JOIN error_groups g ON g.signature = i.signature
  ON CONFLICT (source_id, fingerprint) DO UPDATE
    SET seen_count = dead_letters.seen_count + excluded.seen_count - CASE WHEN excluded.redelivered THEN 1 ELSE 0 END
  RETURNING group_id, failed_at, failure_kind, service, service_version, status, (xmax = 0) AS inserted
),
fresh AS (SELECT * FROM stored WHERE inserted),
per_group AS (
  SELECT group_id, count(*) AS n, min(failed_at) AS first_at, max(failed_at) AS last_at,
    array_agg(DISTINCT failure_kind) AS kinds,
    array_remove(array_agg(DISTINCT service), NULL) AS services,
    array_remove(array_agg(DISTINCT service_version), NULL) AS versions
  FROM fresh GROUP BY group_id
),
groups_updated AS (
  UPDATE error_groups g SET
    count = g.count + p.n,
    first_seen = LEAST(g.first_seen, p.first_at),
    last_seen = GREATEST(g.last_seen, p.last_at),
    failure_kinds = ARRAY(SELECT DISTINCT unnest(g.failure_kinds || p.kinds) ORDER BY 1),
    services = ARRAY(SELECT DISTINCT unnest(g.services || p.services) ORDER BY 1),
    service_versions = ARRAY(SELECT DISTINCT unnest(g.service_versions || p.versions) ORDER BY 1),
    sources = ARRAY(SELECT DISTINCT unnest(g.sources || ARRAY[$34::text]) ORDER BY 1),
    -- A resolved group reopens when new failures arrive; acknowledged and muted ones keep their state.
    status = CASE WHEN g.status = 'resolved' THEN 'open' ELSE g.status END,
    updated_at = now()
  FROM per_group p WHERE g.id = p.group_id
  RETURNING g.id
),
arrivals AS (
  INSERT INTO group_arrivals (group_id, minute, count)
  SELECT group_id, date_trunc('minute', failed_at), count(*) FROM fresh GROUP BY 1, 2
  ON CONFLICT (group_id, minute) DO UPDATE SET count = group_arrivals.count + excluded.count
  RETURNING 1
),
source_updated AS (
  UPDATE sources SET drained_count = drained_count + (SELECT count(*) FROM fresh), last_drain_at = now(),
    last_error = NULL, last_error_at = NULL
  WHERE id = $1::bigint
  RETURNING 1
)
SELECT (SELECT count(*) FROM fresh)::int AS inserted, (SELECT count(*) FROM stored)::int AS stored,
  (SELECT count(*) FROM groups_updated)::int + (SELECT count(*) FROM arrivals)::int + (SELECT count(*) FROM source_updated)::int AS touched`

/** Stores one batch atomically; the caller acks the deliveries only after this resolves. */
export async function storeBatch(sql: Sql, options: { sourceId: string; sourceLabel: string; rows: IngestRow[] }): Promise<StoreBatchResult> {
  const { rows, extraSeen } = collapseDuplicates(options.rows)
  if (rows.length === 0) return { inserted: 0, duplicates: 0 }
  const col = <T>(pick: (row: IngestRow) => T) => rows.map(pick)
  return sql.transaction(async (tx) => {
    await tx.query(
      UPSERT_GROUPS,
      [col((r) => r.signature), col((r) => r.title), col((r) => r.errorType), col((r) => r.messagePattern), col((r) => r.failedAt)],
      { name: 'lazarus_upsert_groups' },
    )
    const { rows: result } = await tx.query<{ inserted: number; stored: number }>(
      INSERT_DEAD_LETTERS,
      [
        options.sourceId,
        col((r) => r.fingerprint), col((r) => r.redelivered), col((r) => r.body), col((r) => r.bodyEncoding),
        col((r) => r.bodyPreview), col((r) => r.propertiesJson), col((r) => r.headersJson), col((r) => r.xDeathJson),
        col((r) => r.deliveryExchange), col((r) => r.deliveryRoutingKey), col((r) => r.deathReason), col((r) => r.attempts),
        col((r) => r.originExchange), col((r) => JSON.stringify(r.originRoutingKeys)), col((r) => r.originQueue),
        col((r) => r.firstDeathAt), col((r) => r.lastDeathAt), col((r) => r.failedAt), col((r) => r.errorType),
        col((r) => r.errorMessage), col((r) => r.errorStack), col((r) => r.failureKind), col((r) => r.service),
        col((r) => r.serviceVersion), col((r) => r.framework), col((r) => r.entityKey), col((r) => r.signature),
        col((r) => JSON.stringify(r.flags)), col((r) => r.lineageOriginId), col((r) => r.replayCount), col((r) => r.status),
        col((r) => extraSeen.get(r.fingerprint.toString('hex')) ?? 0),
        options.sourceLabel,
      ],
      { name: 'lazarus_insert_dead_letters' },
    )
    const inserted = result[0]?.inserted ?? 0
    if ((result[0]?.stored ?? 0) !== rows.length) {
      // Never let the caller ack a delivery whose row did not make it in.
      throw new Error(`stored ${result[0]?.stored ?? 0} of ${rows.length} rows; refusing to commit`)
    }
    return { inserted, duplicates: options.rows.length - inserted }
  })
}
