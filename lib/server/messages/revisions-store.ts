import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { TypedTable } from '@/lib/server/platform/broker/typed-fields'
import type { RevisionDiffDto, RevisionDto } from '@/lib/shared/schemas/revision'
import type { MessageContent } from './revision-content'

/**
 * The SQL of message revisions (docs/ARCHITECTURE.md#revisions). The stored dead letter is only read: an edit writes
 * a message_revisions row, numbered after the newest one.
 */

/** A message with its newest revision (revision 0: the original), which an edit starts from. */
export type EditBase = { id: string; sourceId: string; revision: number; content: MessageContent }

type BaseRow = {
  id: string
  source_id: string
  revision: number | null
  body: Uint8Array
  properties: Record<string, unknown>
  headers_json: string
}

const BASE_SELECT = `SELECT d.id::text, d.source_id::text, r.revision, coalesce(r.body, d.body) AS body, coalesce(r.properties, d.properties) AS properties,
    coalesce(r.headers::text, d.headers::text) AS headers_json
  FROM dead_letters d
  LEFT JOIN LATERAL (SELECT * FROM message_revisions r WHERE r.dead_letter_id = d.id ORDER BY r.revision DESC LIMIT 1) r ON TRUE`

const toBase = (row: BaseRow): EditBase => ({
  id: row.id,
  sourceId: row.source_id,
  revision: row.revision ?? 0,
  content: { body: Buffer.from(row.body), properties: row.properties ?? {}, headers: (JSON.parse(row.headers_json) ?? {}) as TypedTable },
})

export async function loadEditBase({ sql, id, sourceIds }: { sql: Sql; id: string; sourceIds: string[] | null }): Promise<EditBase | null> {
  const { rows } = await sql.query<BaseRow>(
    `${BASE_SELECT} WHERE d.id = $1::bigint${sourceIds ? ' AND d.source_id = ANY($2::bigint[])' : ''}`,
    sourceIds ? [id, sourceIds] : [id],
  )
  return rows[0] ? toBase(rows[0]) : null
}

/** Messages by id, each with its newest revision (a bulk edit reads them in chunks). */
export async function loadEditBases({ sql, ids }: { sql: Sql; ids: string[] }): Promise<EditBase[]> {
  const { rows } = await sql.query<BaseRow>(`${BASE_SELECT} WHERE d.id = ANY($1::bigint[]) ORDER BY d.id`, [ids])
  return rows.map(toBase)
}

/** Serialises the edits of one message for the rest of the transaction (the revision number is max + 1). */
export async function lockMessageEdits({ sql, id }: { sql: Sql; id: string }): Promise<void> {
  await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended('lazarus:message-revision:' || $1::text, 0))`, [id])
}

export type NewRevision = { id: string; content: MessageContent; bodyEncoding: string; diff: RevisionDiffDto; summary: string; actor: string; bulkId: string | null }

type RevisionRow = {
  revision: number; created_by: string; created_at: Date; summary: string; diff: RevisionDiffDto; body_size: number; body_encoding: string; bulk_id: string | null
}
const REVISION_COLUMNS = 'revision, created_by, created_at, summary, diff, body_size, body_encoding, bulk_id'

const toDto = (row: RevisionRow): RevisionDto => ({
  revision: row.revision, createdBy: row.created_by, createdAt: row.created_at.toISOString(), summary: row.summary, diff: row.diff,
  bodySize: row.body_size, bodyEncoding: row.body_encoding, bulkId: row.bulk_id,
})

/**
 * Writes revisions, each numbered after its message's newest. Two concurrent edits of one message collide on the
 * primary key (a 409) unless the caller holds lockMessageEdits.
 */
export async function insertRevisions({ sql, revisions }: { sql: Sql; revisions: NewRevision[] }): Promise<RevisionDto[]> {
  if (revisions.length === 0) return []
  const { rows } = await sql.query<RevisionRow>(
    `INSERT INTO message_revisions (dead_letter_id, revision, body, body_size, body_encoding, headers, properties, diff, summary, bulk_id, created_by)
     SELECT n.id, coalesce((SELECT max(r.revision) FROM message_revisions r WHERE r.dead_letter_id = n.id), 0) + 1,
       decode(n.body, 'hex'), octet_length(decode(n.body, 'hex')), n.encoding, n.headers::json, n.properties::jsonb, n.diff::jsonb, n.summary, n.bulk_id, n.actor
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
       AS n(id, body, encoding, headers, properties, diff, summary, bulk_id, actor)
     RETURNING ${REVISION_COLUMNS}`,
    [
      revisions.map((r) => r.id), // Hex text: a bytea[] parameter is not read alike by node-pg and PGlite.
      revisions.map((r) => r.content.body.toString('hex')), revisions.map((r) => r.bodyEncoding), revisions.map((r) => JSON.stringify(r.content.headers)),
      revisions.map((r) => JSON.stringify(r.content.properties)), revisions.map((r) => JSON.stringify(r.diff)), revisions.map((r) => r.summary),
      revisions.map((r) => r.bulkId), revisions.map((r) => r.actor),
    ],
  )
  return rows.map(toDto)
}

export async function listRevisionRows({ sql, id, limit }: { sql: Sql; id: string; limit: number }): Promise<RevisionDto[]> {
  const { rows } = await sql.query<RevisionRow>(
    `SELECT ${REVISION_COLUMNS} FROM message_revisions WHERE dead_letter_id = $1::bigint ORDER BY revision DESC LIMIT $2::int`,
    [id, limit],
  )
  return rows.map(toDto)
}

/** The message's replay items not yet published or answered, and the revision each froze (null: the original). */
export async function openReplayRevisions({ sql, id }: { sql: Sql; id: string }): Promise<{ jobId: string; revision: number | null }[]> {
  const { rows } = await sql.query<{ job_id: string; revision: number | null }>(
    `SELECT job_id::text, revision FROM replay_items WHERE dead_letter_id = $1::bigint AND kind = 'replay' AND status IN ('pending', 'in_flight') ORDER BY job_id`,
    [id],
  )
  return rows.map((r) => ({ jobId: r.job_id, revision: r.revision }))
}

/** A job item's frozen revision beside the stored original: what the job sends instead of it. */
export type FrozenRevisionRow = {
  dead_letter_id: string
  seq: number
  item_status: string
  revision: number
  created_by: string
  created_at: Date
  original: MessageContent
  edited: MessageContent
}

type FrozenRow = {
  dead_letter_id: string; seq: number; item_status: string; revision: number; created_by: string; created_at: Date
  original_body: Uint8Array; original_properties: Record<string, unknown>; original_headers: string
  edited_body: Uint8Array; edited_properties: Record<string, unknown>; edited_headers: string
}

const contentOf = (body: Uint8Array, properties: Record<string, unknown> | null, headers: string): MessageContent => ({
  body: Buffer.from(body), properties: properties ?? {}, headers: (JSON.parse(headers) ?? {}) as TypedTable,
})

/**
 * The replay items of a job that froze a revision (docs/ARCHITECTURE.md#revisions), in publish order, each with the
 * original and that revision (the first `limit`), and how many there are. `sourceIds`: only messages of those sources.
 */
export async function selectFrozenRevisions({ sql, jobId, sourceIds, limit }: { sql: Sql; jobId: string; sourceIds: string[] | null; limit: number }): Promise<{ total: number; rows: FrozenRevisionRow[] }> {
  const params: unknown[] = sourceIds ? [jobId, limit, sourceIds] : [jobId, limit]
  // count(*) OVER () is taken before the LIMIT: every frozen revision of the job, in one query.
  const { rows } = await sql.query<FrozenRow & { total: number }>(
    `SELECT d.id::text AS dead_letter_id, i.seq, i.status AS item_status, r.revision, r.created_by, r.created_at, count(*) OVER ()::int AS total,
       d.body AS original_body, d.properties AS original_properties, d.headers::text AS original_headers,
       r.body AS edited_body, r.properties AS edited_properties, r.headers::text AS edited_headers
     FROM replay_items i
     JOIN dead_letters d ON d.id = i.dead_letter_id
     JOIN message_revisions r ON r.dead_letter_id = i.dead_letter_id AND r.revision = i.revision
     WHERE i.job_id = $1::bigint AND i.kind = 'replay' AND i.revision IS NOT NULL${sourceIds ? ' AND d.source_id = ANY($3::bigint[])' : ''}
     ORDER BY i.seq LIMIT $2::int`,
    params,
  )
  return {
    total: rows[0]?.total ?? 0,
    rows: rows.map((row) => ({
      dead_letter_id: row.dead_letter_id, seq: row.seq, item_status: row.item_status, revision: row.revision, created_by: row.created_by, created_at: row.created_at,
      original: contentOf(row.original_body, row.original_properties, row.original_headers),
      edited: contentOf(row.edited_body, row.edited_properties, row.edited_headers),
    })),
  }
}
