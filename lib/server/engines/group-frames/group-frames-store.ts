import 'server-only'
import { typedTableToPlain, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import type { Sql } from '@/lib/server/platform/db/sql'
import { normaliseDelivery } from '@/lib/server/ingest/normalise/normalise-delivery'
import type { AmqpProperties } from '@/lib/server/ingest/types'

export type BackfillGroupFramesOptions = {
  sql: Sql
  /** Groups taken per transaction. */
  groups?: number
}

export type BackfillGroupFramesResult = { groups: number; filled: number; more: boolean }

type NewestMessage = {
  group_id: string; signature: string; queue: string | null; delivery_exchange: string | null; delivery_routing_key: string | null
  redelivered: boolean | null; properties: AmqpProperties | null; headers: string | null; body: Buffer | null
}

/**
 * Derives the top frames of a few groups of group_frames_backlog (prisma/migrations/20261208090000_group_frames_backlog)
 * from each one's newest message, through the drainer's normaliser, in one transaction with taking them off the
 * backlog: a crash before the commit leaves them listed for the next pass. Frames are written only when the signature
 * computed now is the group's, and only over an empty array.
 */
export async function backfillGroupFrames({ sql, groups = 50 }: BackfillGroupFramesOptions): Promise<BackfillGroupFramesResult> {
  return sql.transaction(async (tx) => {
    const { rows } = await tx.query<NewestMessage>(
      `WITH taken AS (
         DELETE FROM group_frames_backlog WHERE group_id IN (
           SELECT group_id FROM group_frames_backlog ORDER BY group_id LIMIT $1 FOR UPDATE SKIP LOCKED
         ) RETURNING group_id
       )
       SELECT g.id::text AS group_id, g.signature, m.queue, m.delivery_exchange, m.delivery_routing_key, m.redelivered,
              m.properties, m.headers::text AS headers, m.body
       FROM taken JOIN error_groups g ON g.id = taken.group_id
       LEFT JOIN LATERAL (
         SELECT s.queue, d.delivery_exchange, d.delivery_routing_key, d.redelivered, d.properties, d.headers, d.body
         FROM dead_letters d JOIN sources s ON s.id = d.source_id
         WHERE d.group_id = g.id ORDER BY d.failed_at DESC, d.id DESC LIMIT 1
       ) m ON true`,
      [groups],
    )
    let filled = 0
    for (const row of rows) {
      const frames = framesOf(row)
      if (frames.length === 0) continue
      filled += await tx.execute(`UPDATE error_groups SET top_frames = $2::text[] WHERE id = $1::bigint AND top_frames = '{}'`, [row.group_id, frames])
    }
    return { groups: rows.length, filled, more: rows.length === groups }
  })
}

/** The frames the group's signature hashed, re-derived from its newest message; none when the signature differs now. */
function framesOf(row: NewestMessage): string[] {
  if (row.queue === null || row.body === null) return []
  try {
    const derived = normaliseDelivery({
      queue: row.queue,
      exchange: row.delivery_exchange ?? '',
      routingKey: row.delivery_routing_key ?? '',
      redelivered: row.redelivered ?? false,
      properties: row.properties ?? {},
      headers: typedTableToPlain(JSON.parse(row.headers ?? '{}') as TypedTable),
      body: row.body,
    })
    return derived.signature === row.signature ? (derived.topFrames ?? []).map((f) => f.replaceAll('\u0000', '\uFFFD').slice(0, 512)) : []
  } catch {
    // A stored message the normaliser cannot read again keeps its group without frames, as before.
    return []
  }
}
