/**
 * What PostgreSQL holds per stored message, by table, TOAST and index: how bench:drain reports storage against the
 * target of docs/performance.md (the message's own bytes + 1.5 KB). Sizes are on-disk pages, so a table's free space
 * counts too, as it does on the disk.
 */
import pg from 'pg'
import { openDb } from '@/lib/server/platform/db'
import { indexSearchBacklog } from '@/lib/server/engines/search-indexer/search-index-store'
import { encodeTypedTable, type TypedTable } from '@/lib/server/platform/broker/typed-fields'

export type StoragePart = { name: string; bytesPerMessage: number }

export type StorageReport = {
  messages: number
  /** Bytes per message in every table, TOAST table and index. */
  perMessage: number
  parts: StoragePart[]
  /**
   * What the messages themselves weigh, on average: the body, the header table as AMQP encodes it (the typed codec
   * re-encodes it byte for byte), and the properties' values (strings by their bytes, numbers as 8).
   */
  ownBytesPerMessage: number
}

/** Indexes the search backlog first (the worker's background indexer may not have caught up when it stopped). */
export async function storagePerMessage({ url }: { url: string }): Promise<StorageReport> {
  const db = await openDb({ databaseUrl: url, migrate: false })
  try {
    let taken: number
    do taken = (await indexSearchBacklog({ sql: db.background, ranges: 32 })).ranges
    while (taken > 0)
  } finally {
    await db.close()
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('CHECKPOINT')
    const { rows: [{ n: messages }] } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters')
    const { rows } = await client.query<{ name: string; bytes: string }>(`
      SELECT c.relname AS name, pg_relation_size(c.oid)::text AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
      UNION ALL
      SELECT c.relname || ' (TOAST)', pg_total_relation_size(c.reltoastrelid)::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.reltoastrelid <> 0
      UNION ALL
      SELECT t.relname || ' › ' || i.relname, pg_relation_size(i.oid)::text FROM pg_index x
      JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = 'public'`)
    let own = 0
    const sample = await client.query<{ body_size: number; headers: TypedTable; properties: Record<string, unknown> }>(
      'SELECT body_size, headers, properties FROM dead_letters ORDER BY id LIMIT 1000',
    )
    for (const row of sample.rows) {
      const properties = Object.values(row.properties).reduce<number>((sum, v) => sum + (typeof v === 'string' ? Buffer.byteLength(v) : 8), 0)
      own += row.body_size + encodeTypedTable(row.headers).length + properties
    }
    const parts = rows
      .map((r) => ({ name: r.name, bytesPerMessage: Number(r.bytes) / Math.max(1, messages) }))
      .filter((p) => p.bytesPerMessage >= 1)
      .sort((a, b) => b.bytesPerMessage - a.bytesPerMessage)
    return { messages, perMessage: parts.reduce((sum, p) => sum + p.bytesPerMessage, 0), parts, ownBytesPerMessage: Math.round(own / Math.max(1, sample.rows.length)) }
  } finally {
    await client.end()
  }
}
