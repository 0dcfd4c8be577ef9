/** Table sizes and the index list of the bench database, as `npm run bench:api` prints them last. */
import pg from 'pg'

const mib = (bytes: string | number) => `${(Number(bytes) / 1024 / 1024).toFixed(1)} MiB`

function table(head: string[], rows: string[][], rightAligned: boolean[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  const line = (cells: string[]) => cells.map((c, i) => (rightAligned[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd()
  return [line(head), line(head.map((_, i) => '-'.repeat(widths[i]))), ...rows.map(line)].join('\n')
}

export async function storageReport(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows: tables } = await client.query<{ name: string; rows: string; total: string; heap: string; toast: string; indexes: string }>(`
      SELECT c.relname AS name, c.reltuples::bigint::text AS rows, pg_total_relation_size(c.oid) AS total,
        pg_relation_size(c.oid) AS heap, COALESCE(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0) AS toast,
        pg_indexes_size(c.oid) AS indexes
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY pg_total_relation_size(c.oid) DESC`)
    const { rows: indexes } = await client.query<{ table: string; name: string; size: string; def: string }>(`
      SELECT t.relname AS table, i.relname AS name, pg_relation_size(i.oid) AS size, pg_get_indexdef(i.oid) AS def
      FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = 'public' ORDER BY t.relname, i.relname`)
    const { rows: [db] } = await client.query<{ size: string }>('SELECT pg_database_size(current_database()) AS size')
    return [
      `Tables (database ${mib(db.size)}):`,
      table(['table', 'rows (est.)', 'total', 'heap', 'toast', 'indexes'],
        tables.map((t) => [t.name, Number(t.rows).toLocaleString('en-US'), mib(t.total), mib(t.heap), mib(t.toast), mib(t.indexes)]),
        [false, true, true, true, true, true]),
      '',
      'Indexes:',
      table(['table', 'index', 'size', 'definition'],
        indexes.map((i) => [i.table, i.name, mib(i.size), i.def.replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+ USING /, (_, u) => `${u ? 'UNIQUE ' : ''}`)]),
        [false, false, true, false]),
    ].join('\n')
  } finally {
    await client.end()
  }
}
