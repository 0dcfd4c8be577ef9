import { startDrainer, type Drainer } from '@/lib/server/engines/drainer/drainer'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { AMQP_URL } from './broker'

/** Registers queues as sources and starts an in-process drainer on them. */
export async function drainQueues(db: Db, queues: string[], options: { batch?: number; prefetch?: number; maxHoldMs?: number; entityKey?: unknown } = {}): Promise<{ drainer: Drainer; sourceIds: Record<string, string> }> {
  const sourceIds: Record<string, string> = {}
  for (const queue of queues) {
    const { rows } = await db.sql.query<{ id: string }>(
      `INSERT INTO sources (vhost, queue, entity_key) VALUES ('/', $1, $2::jsonb) ON CONFLICT (vhost, queue) DO UPDATE SET enabled = true RETURNING id::text`,
      [queue, options.entityKey ? JSON.stringify(options.entityKey) : null],
    )
    sourceIds[queue] = rows[0].id
  }
  const drainer = startDrainer({
    db,
    config: {
      AMQP_URL,
      LAZARUS_DRAIN_BATCH: options.batch ?? 200,
      LAZARUS_DRAIN_PREFETCH: options.prefetch ?? 400,
      LAZARUS_DRAIN_FLUSH_MS: 20,
      LAZARUS_MAX_BODY_BYTES: 16 * 1024 * 1024,
    },
    reconcileMs: 500,
    maxHoldMs: options.maxHoldMs,
  })
  return { drainer, sourceIds }
}

export async function storedCount(sql: Sql, sourceId: string): Promise<number> {
  const { rows } = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters WHERE source_id = $1::bigint', [sourceId])
  return rows[0].n
}
