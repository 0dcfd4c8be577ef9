import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { heldFlagsSql } from '@/lib/server/pauses/held-row'
import { PREVIEW_CHARS, type IngestRow } from '@/lib/server/ingest/types'

/** One normalised delivery, ready for the database. JSON columns arrive serialised. */

export type StoreBatchResult = { inserted: number; duplicates: number }

export type StoreBatchOptions = {
  /** The pool (each batch is one transaction on it), or a transaction the caller holds, which the batch joins. */
  sql: Sql
  sourceId: string
  /** The source's queue, recorded in the groups' `sources` facet. */
  sourceLabel: string
  rows: IngestRow[]
}

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

const ENSURE_GROUPS = `
INSERT INTO error_groups (signature, title, error_type, message_pattern, first_seen, last_seen, top_frames)
SELECT DISTINCT ON (signature) signature, title, error_type, message_pattern, failed_at, failed_at,
  ARRAY(SELECT f FROM jsonb_array_elements_text(frames::jsonb) WITH ORDINALITY AS x(f, n) ORDER BY n)
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[])
  AS t(signature, title, error_type, message_pattern, failed_at, frames)
ORDER BY signature
ON CONFLICT (signature) DO NOTHING`

/** The columns each row sets, one parameter each in rowParams order (SQL_VALUES derives some from others). */
const PARAM_COLUMNS = [
  'source_id', 'group_id', 'fingerprint', 'seen_count', 'redelivered', 'body', 'body_size', 'body_encoding', 'body_preview',
  'properties', 'headers', 'delivery_exchange', 'delivery_routing_key', 'death_reason', 'attempts',
  'origin_exchange', 'origin_routing_keys', 'origin_queue', 'first_death_at', 'last_death_at', 'failed_at',
  'error_type', 'error_message', 'error_stack', 'failure_kind', 'service', 'service_version', 'framework',
  'entity_key', 'flags', 'lineage_origin_id', 'replay_count', 'lineage_replay_id', 'held_from', 'entity_version',
  'trace_id', 'span_id',
] as const
type ParamColumn = (typeof PARAM_COLUMNS)[number]

/** Bodies up to this many bytes get their preview cut in SQL, so their text is not sent twice. */
const SQL_PREVIEW_MAX_BODY_BYTES = 8 * 1024

/**
 * Values PostgreSQL derives from parameters the row sends anyway, rather than receiving them twice: the preview of
 * a short text body is cut from the body itself (rowParams sends a preview only for longer bodies).
 * x_death is not stored any more: it is the headers' own x-death entry, read from them (get-message, export). The
 * column stays for rows stored before; not writing it saves PostgreSQL a parse of every header table and keeps
 * the row narrower.
 */
const SQL_VALUES: Partial<Record<ParamColumn, (param: (column: ParamColumn) => string) => string>> = {
  body_preview: (p) =>
    `CASE WHEN ${p('body_encoding')}::text = 'binary' THEN NULL ELSE left(coalesce(${p('body_preview')}::text, convert_from(${p('body')}::bytea, 'UTF8')), ${PREVIEW_CHARS}) END`,
}
/** A held row is flagged held-unexpected, in the statement that writes it, when no pause explains it (held-row.ts). */
const HELD_SQL_VALUES: typeof SQL_VALUES = { ...SQL_VALUES, flags: heldFlagsSql }

function rowParams(row: IngestRow, sourceId: string, groupId: string, extraSeen: number): unknown[] {
  return [
    sourceId, groupId, row.fingerprint, 1 + extraSeen, row.redelivered, row.body, row.body.length, row.bodyEncoding,
    row.body.length <= SQL_PREVIEW_MAX_BODY_BYTES ? null : row.bodyPreview,
    row.propertiesJson, row.headersJson, row.deliveryExchange, row.deliveryRoutingKey, row.deathReason, row.attempts,
    row.originExchange, row.originRoutingKeys, row.originQueue, row.firstDeathAt, row.lastDeathAt, row.failedAt,
    row.errorType, row.errorMessage, row.errorStack, row.failureKind, row.service, row.serviceVersion, row.framework,
    row.entityKey, row.flags, row.lineageOriginId, row.replayCount, row.lineageReplayId ?? null, row.heldFrom ?? null,
    row.entityVersion ?? null, row.traceId ?? null, row.spanId ?? null,
  ]
}

const statements = new Map<string, string>()

/**
 * Phase 1: store the rows. A multi-row VALUES list with one parameter per value lets node-pg send bodies as
 * binary parameters (no hex or array escaping), and PostgreSQL keeps one prepared plan per batch size. What
 * was really new ((xmax = 0) only for inserted tuples) comes back aggregated per group and minute. A dead message has
 * no status row; a batch of held ones gets theirs in the same statement (the status is then the last parameter).
 */
function insertStatement(rowCount: number, status: IngestRow['status']): string {
  const key = `${status}:${rowCount}`
  const cached = statements.get(key)
  if (cached) return cached
  if (statements.size > 64) statements.clear()
  const width = PARAM_COLUMNS.length
  const derived = status === 'held' ? HELD_SQL_VALUES : SQL_VALUES
  const values: string[] = []
  for (let r = 0; r < rowCount; r++) {
    const param = (column: ParamColumn) => `$${r * width + 1 + PARAM_COLUMNS.indexOf(column)}`
    values.push(`(${PARAM_COLUMNS.map((column) => derived[column]?.(param) ?? param(column)).join(', ')})`)
  }
  const text = `
WITH stored AS (
  INSERT INTO dead_letters (${PARAM_COLUMNS.join(', ')})
  VALUES ${values.join(',\n')}
  ON CONFLICT (source_id, fingerprint) DO UPDATE
    SET seen_count = dead_letters.seen_count + excluded.seen_count - CASE WHEN excluded.redelivered THEN 1 ELSE 0 END
  RETURNING id, group_id, failed_at, failure_kind, service, service_version, (xmax = 0) AS inserted
)${status === 'dead' ? '' : `,
states AS (
  INSERT INTO dead_letter_states (dead_letter_id, status, failed_at)
  SELECT id, $${rowCount * width + 1}::text, failed_at FROM stored WHERE inserted
)`}
SELECT group_id::text, date_trunc('minute', failed_at) AS minute, count(*)::int AS stored,
  (min(id) FILTER (WHERE inserted))::text AS first_id, (max(id) FILTER (WHERE inserted))::text AS last_id,
  (count(*) FILTER (WHERE inserted))::int AS fresh,
  min(failed_at) FILTER (WHERE inserted) AS first_at, max(failed_at) FILTER (WHERE inserted) AS last_at,
  array_agg(DISTINCT failure_kind) FILTER (WHERE inserted) AS kinds,
  array_agg(DISTINCT service) FILTER (WHERE inserted AND service IS NOT NULL) AS services,
  array_agg(DISTINCT service_version) FILTER (WHERE inserted AND service_version IS NOT NULL) AS versions
FROM stored GROUP BY 1, 2`
  statements.set(key, text)
  return text
}

type StoredAggregate = {
  group_id: string; minute: Date; stored: number; fresh: number; first_at: Date | null; last_at: Date | null
  first_id: string | null; last_id: string | null
  kinds: string[] | null; services: string[] | null; versions: string[] | null
}

// Phase 2: the counters. Rows of error_groups are locked in id order first, so two batches in flight (or two
// workers) that touch the same groups queue up instead of deadlocking.
const LOCK_GROUPS = 'SELECT id FROM error_groups WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE'

const UPDATE_COUNTERS = `
WITH input AS (
  -- The facet values of each group as sorted text arrays, parsed once for the group row and its source's row.
  SELECT t.group_id, t.n, t.first_at, t.last_at,
    ARRAY(SELECT jsonb_array_elements_text(t.kinds::jsonb) ORDER BY 1) AS kinds,
    ARRAY(SELECT jsonb_array_elements_text(t.services::jsonb) ORDER BY 1) AS services,
    ARRAY(SELECT jsonb_array_elements_text(t.versions::jsonb) ORDER BY 1) AS versions
  FROM unnest($1::bigint[], $2::int[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::text[], $7::text[])
    AS t(group_id, n, first_at, last_at, kinds, services, versions)
),
groups_updated AS (
  UPDATE error_groups g SET
    count = g.count + i.n,
    first_seen = LEAST(g.first_seen, i.first_at),
    last_seen = GREATEST(g.last_seen, i.last_at),
    failure_kinds = ARRAY(SELECT DISTINCT unnest(g.failure_kinds || i.kinds) ORDER BY 1),
    services = ARRAY(SELECT DISTINCT unnest(g.services || i.services) ORDER BY 1),
    service_versions = ARRAY(SELECT DISTINCT unnest(g.service_versions || i.versions) ORDER BY 1),
    sources = CASE WHEN $8::text = ANY(g.sources) THEN g.sources ELSE ARRAY(SELECT DISTINCT unnest(g.sources || ARRAY[$8::text]) ORDER BY 1) END,
    -- A resolved group reopens when new failures arrive; acknowledged and muted ones keep their state.
    status = CASE WHEN g.status = 'resolved' THEN 'open' ELSE g.status END,
    updated_at = now()
  FROM input i WHERE g.id = i.group_id
  RETURNING g.id
),
arrivals AS (
  INSERT INTO group_arrivals (group_id, minute, count)
  SELECT * FROM unnest($9::bigint[], $10::timestamptz[], $11::int[]) AS a(group_id, minute, count) ORDER BY 1, 2
  ON CONFLICT (group_id, minute) DO UPDATE SET count = group_arrivals.count + excluded.count
  RETURNING 1
),
-- The same counters and buckets for this batch's source (migration 20261205200000_group_source_counters): a batch
-- comes from one source, so these are as many rows as above. Written under the group locks LOCK_GROUPS took.
source_stats AS (
  INSERT INTO group_source_stats AS s (group_id, source_id, count, first_seen, last_seen, failure_kinds, services, service_versions)
  SELECT i.group_id, $13::bigint, i.n, i.first_at, i.last_at, i.kinds, i.services, i.versions FROM input i ORDER BY 1
  ON CONFLICT (group_id, source_id) DO UPDATE SET
    count = s.count + excluded.count,
    first_seen = LEAST(s.first_seen, excluded.first_seen),
    last_seen = GREATEST(s.last_seen, excluded.last_seen),
    -- Mostly values the source has shown before: then the stored array stands, without a sort.
    failure_kinds = CASE WHEN excluded.failure_kinds <@ s.failure_kinds THEN s.failure_kinds
      ELSE ARRAY(SELECT DISTINCT unnest(s.failure_kinds || excluded.failure_kinds) ORDER BY 1) END,
    services = CASE WHEN excluded.services <@ s.services THEN s.services
      ELSE ARRAY(SELECT DISTINCT unnest(s.services || excluded.services) ORDER BY 1) END,
    service_versions = CASE WHEN excluded.service_versions <@ s.service_versions THEN s.service_versions
      ELSE ARRAY(SELECT DISTINCT unnest(s.service_versions || excluded.service_versions) ORDER BY 1) END
  RETURNING 1
),
source_arrivals AS (
  INSERT INTO group_source_arrivals (group_id, source_id, minute, count)
  SELECT a.group_id, $13::bigint, a.minute, a.count FROM unnest($9::bigint[], $10::timestamptz[], $11::int[]) AS a(group_id, minute, count) ORDER BY 1, 3
  ON CONFLICT (group_id, source_id, minute) DO UPDATE SET count = group_source_arrivals.count + excluded.count
  RETURNING 1
),
-- The id range these rows occupy, for the search indexer (migration 20261201020000_search_index).
backlog AS (
  INSERT INTO search_backlog (first_id, last_id) SELECT $14::bigint, $15::bigint WHERE $14::bigint IS NOT NULL
  RETURNING 1
)
UPDATE sources SET drained_count = drained_count + $12::int, last_drain_at = now(), last_error = NULL, last_error_at = NULL
WHERE id = $13::bigint`

/** Phase 2, inside the batch's transaction (`sql`): locks the batch's groups, then updates every counter in one statement. */
async function updateCounters(options: { sql: Sql; aggregates: StoredAggregate[]; sourceId: string; sourceLabel: string }): Promise<number> {
  const { sql: tx, aggregates } = options
  const perGroup = new Map<string, { n: number; first: Date; last: Date; kinds: Set<string>; services: Set<string>; versions: Set<string> }>()
  const arrivals = aggregates.filter((a) => a.fresh > 0).sort((a, b) => Number(BigInt(a.group_id) - BigInt(b.group_id)) || a.minute.getTime() - b.minute.getTime())
  for (const a of arrivals) {
    const g = perGroup.get(a.group_id) ?? { n: 0, first: a.first_at!, last: a.last_at!, kinds: new Set(), services: new Set(), versions: new Set() }
    g.n += a.fresh
    if (a.first_at && a.first_at < g.first) g.first = a.first_at
    if (a.last_at && a.last_at > g.last) g.last = a.last_at
    for (const k of a.kinds ?? []) g.kinds.add(k)
    for (const v of a.services ?? []) g.services.add(v)
    for (const v of a.versions ?? []) g.versions.add(v)
    perGroup.set(a.group_id, g)
  }
  const fresh = arrivals.reduce((sum, a) => sum + a.fresh, 0)
  const ids = [...perGroup.keys()]
  const groups = [...perGroup.values()]
  if (ids.length > 0) await tx.query(LOCK_GROUPS, [ids], { name: 'lazarus_lock_groups' })
  await tx.query(
    UPDATE_COUNTERS,
    [
      ids, groups.map((g) => g.n), groups.map((g) => g.first), groups.map((g) => g.last),
      groups.map((g) => JSON.stringify([...g.kinds])), groups.map((g) => JSON.stringify([...g.services])), groups.map((g) => JSON.stringify([...g.versions])),
      options.sourceLabel,
      arrivals.map((a) => a.group_id), arrivals.map((a) => a.minute), arrivals.map((a) => a.fresh),
      fresh, options.sourceId,
      idBound(arrivals, 'first_id', (a, b) => a < b), idBound(arrivals, 'last_id', (a, b) => a > b),
    ],
    { name: 'lazarus_update_counters' },
  )
  return fresh
}

function idBound(aggregates: StoredAggregate[], key: 'first_id' | 'last_id', better: (a: bigint, b: bigint) => boolean): string | null {
  let bound: bigint | null = null
  for (const a of aggregates) {
    const value = a[key]
    if (value !== null && (bound === null || better(BigInt(value), bound))) bound = BigInt(value)
  }
  return bound === null ? null : bound.toString()
}

/** Group ids by signature, per database; groups are never deleted, so a process may remember them. */
const groupIdsByDb = new WeakMap<Sql, Map<string, string>>()

/**
 * The group id of every row's signature: known ones from the process-wide cache, the others created (or found) in
 * this transaction and returned apart, for the caller to remember only once the transaction has committed. A group
 * created by a batch that then rolled back does not exist, and remembering its id would fail every later batch of
 * that signature on the foreign key.
 */
async function resolveGroups(options: { sql: Sql; rows: IngestRow[]; known: Map<string, string> }): Promise<{ ids: Map<string, string>; found: Map<string, string> }> {
  const { sql: tx, rows, known } = options
  const found = new Map<string, string>()
  const seen = new Set<string>()
  const missing = rows.filter((r) => !known.has(r.signature) && !seen.has(r.signature) && seen.add(r.signature))
  if (missing.length === 0) return { ids: known, found }
  const col = <T>(pick: (row: IngestRow) => T) => missing.map(pick)
  await tx.query(ENSURE_GROUPS, [col((r) => r.signature), col((r) => r.title), col((r) => r.errorType), col((r) => r.messagePattern), col((r) => r.failedAt), col((r) => JSON.stringify(r.topFrames ?? []))])
  const { rows: groups } = await tx.query<{ id: string; signature: string }>(
    'SELECT id::text, signature FROM error_groups WHERE signature = ANY($1::text[])',
    [col((r) => r.signature)],
  )
  for (const g of groups) found.set(g.signature, g.id)
  return { ids: new Map([...known, ...found]), found }
}

/**
 * Stores one batch atomically; the caller acks the deliveries only after this resolves. A drainer's batch has one
 * status (its source's); rows of several statuses are stored one status at a time, each part atomically.
 */
export async function storeBatch(options: StoreBatchOptions): Promise<StoreBatchResult> {
  const statuses = new Set(options.rows.map((row) => row.status))
  if (statuses.size <= 1) return storeOneStatus(options)
  const result: StoreBatchResult = { inserted: 0, duplicates: 0 }
  for (const status of statuses) {
    const part = await storeOneStatus({ ...options, rows: options.rows.filter((row) => row.status === status) })
    result.inserted += part.inserted
    result.duplicates += part.duplicates
  }
  return result
}

/** PostgreSQL's limit on one statement's parameters, less the status parameter, in rows. */
const MAX_ROWS_PER_STATEMENT = Math.floor((65_535 - 1) / PARAM_COLUMNS.length)

/**
 * The aggregates of several INSERT statements of one batch, one per group and minute as a single statement gives them:
 * the counters' statement writes each (group, minute) once.
 */
function mergeAggregates(a: StoredAggregate[], b: StoredAggregate[]): StoredAggregate[] {
  const byKey = new Map<string, StoredAggregate>()
  const union = (x: string[] | null, y: string[] | null) => (x === null && y === null ? null : [...new Set([...(x ?? []), ...(y ?? [])])])
  const pick = <T,>(x: T | null, y: T | null, better: (p: T, q: T) => boolean) => (x === null ? y : y === null ? x : better(y, x) ? y : x)
  const byId = (p: string, q: string) => BigInt(p) < BigInt(q)
  for (const next of [...a, ...b]) {
    const key = `${next.group_id}|${next.minute.getTime()}`
    const seen = byKey.get(key)
    if (!seen) {
      byKey.set(key, { ...next })
      continue
    }
    seen.stored += next.stored
    seen.fresh += next.fresh
    seen.first_at = pick(seen.first_at, next.first_at, (p, q) => p < q)
    seen.last_at = pick(seen.last_at, next.last_at, (p, q) => p > q)
    seen.first_id = pick(seen.first_id, next.first_id, byId)
    seen.last_id = pick(seen.last_id, next.last_id, (p, q) => BigInt(p) > BigInt(q))
    seen.kinds = union(seen.kinds, next.kinds)
    seen.services = union(seen.services, next.services)
    seen.versions = union(seen.versions, next.versions)
  }
  return [...byKey.values()]
}

async function storeOneStatus(options: StoreBatchOptions): Promise<StoreBatchResult> {
  const { sql } = options
  const { rows, extraSeen } = collapseDuplicates(options.rows)
  if (rows.length === 0) return { inserted: 0, duplicates: 0 }
  let knownGroups = groupIdsByDb.get(sql)
  if (!knownGroups) groupIdsByDb.set(sql, (knownGroups = new Map()))
  const cache = knownGroups
  let created = new Map<string, string>()
  const result = await sql.transaction(async (tx) => {
    // Planning a 500-row VALUES list costs more than executing it; a named statement reuses one generic plan.
    if (tx.kind === 'postgres') await tx.query('SET LOCAL plan_cache_mode = force_generic_plan')
    const { ids: groups, found } = await resolveGroups({ sql: tx, rows, known: cache })
    created = found
    const status = rows[0].status
    let aggregates: StoredAggregate[] = []
    // PostgreSQL takes at most 65,535 parameters per statement: a batch larger than that (LAZARUS_DRAIN_BATCH allows
    // 5,000 rows of PARAM_COLUMNS each) goes in as several statements of the one transaction.
    for (let start = 0; start < rows.length; start += MAX_ROWS_PER_STATEMENT) {
      const slice = rows.length <= MAX_ROWS_PER_STATEMENT ? rows : rows.slice(start, start + MAX_ROWS_PER_STATEMENT)
      const params: unknown[] = []
      for (const row of slice) {
        const groupId = groups.get(row.signature)
        if (!groupId) throw new Error(`error group ${row.signature} could not be created`)
        params.push(...rowParams(row, options.sourceId, groupId, extraSeen.get(row.fingerprint.toString('hex')) ?? 0))
      }
      if (status !== 'dead') params.push(status)
      // Only large batches get a named (per-connection) plan: small ones are cheap to plan and vary in size.
      const name = slice.length >= 100 ? `lazarus_insert_${status}_letters_${slice.length}` : undefined
      const { rows: part } = await tx.query<StoredAggregate>(insertStatement(slice.length, status), params, { name })
      aggregates = aggregates.length === 0 ? part : mergeAggregates(aggregates, part)
    }
    const stored = aggregates.reduce((sum, a) => sum + a.stored, 0)
    if (stored !== rows.length) {
      // Never let the caller ack a delivery whose row did not make it in.
      throw new Error(`stored ${stored} of ${rows.length} rows; refusing to commit`)
    }
    const inserted = await updateCounters({ sql: tx, aggregates, sourceId: options.sourceId, sourceLabel: options.sourceLabel })
    return { inserted, duplicates: options.rows.length - inserted }
  })
  for (const [signature, id] of created) cache.set(signature, id)
  return result
}
