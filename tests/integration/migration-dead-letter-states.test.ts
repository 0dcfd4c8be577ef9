import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDb, type Db } from '@/lib/server/platform/db'
import { applyMigrations, loadMigrations } from '@/lib/server/platform/db/migrate'

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const STATES_MIGRATION = '20261203000000_dead_letter_states'

/**
 * A database migrated before the status moved out of dead_letters keeps every message's status, reason, actor and
 * time through the migration, and the list order of a status filter is served by the new index.
 */
describe('migration 20261203000000_dead_letter_states', () => {
  const name = `lazarus_test_${randomBytes(4).toString('hex')}`
  let db: Db

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    await admin.end()
    const url = new URL(ADMIN_URL)
    url.pathname = `/${name}`
    db = await openDb({ databaseUrl: url.toString(), migrate: false })
    const all = await loadMigrations()
    await applyMigrations({ sql: db.sql, migrations: all.filter((m) => m.name < STATES_MIGRATION) })

    const source = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('orders.dlq') RETURNING id::text`)).rows[0].id
    const group = (await db.sql.query<{ id: string }>(
      `INSERT INTO error_groups (signature, title, first_seen, last_seen) VALUES ('v1:m', 'Boom', now(), now()) RETURNING id::text`,
    )).rows[0].id
    await db.sql.query(
      `INSERT INTO dead_letters (source_id, group_id, fingerprint, body, body_size, body_encoding, properties, headers,
         delivery_exchange, delivery_routing_key, redelivered, failed_at, failure_kind, framework,
         status, status_reason, status_changed_at, status_changed_by)
       SELECT $1::bigint, $2::bigint, sha256(convert_to(i::text, 'UTF8')), convert_to('{}', 'UTF8'), 2, 'json', '{}'::jsonb, '{}'::json,
         'dlx', 'orders', false, timestamptz '2026-11-01T00:00:00Z' + i * interval '1 minute', 'unknown', 'plain-dlx',
         (ARRAY['dead', 'replayed', 'resolved', 'held', 'replaying'])[1 + i % 5],
         CASE WHEN i % 5 = 2 THEN 'duplicate of ' || i WHEN i % 10 = 5 THEN 'nacked by the broker' END,
         CASE WHEN i % 5 <> 0 OR i % 10 = 5 THEN timestamptz '2026-11-20T00:00:00Z' + i * interval '1 second' END,
         CASE WHEN i % 5 <> 0 OR i % 10 = 5 THEN 'ops-' || i END
       FROM generate_series(1, 50) i`,
      [source, group],
    )
    expect(await applyMigrations({ sql: db.sql })).toContain(STATES_MIGRATION)
  })

  afterAll(async () => {
    await db?.close().catch(() => {})
    const admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  })

  it('carries every status, reason, actor and time over (message_statuses shows each message)', async () => {
    const { rows } = await db.sql.query<{ n: number; status: string; reason: string | null; changed_by: string | null; changed_at: Date | null }>(
      `SELECT row_number() OVER (ORDER BY d.id)::int AS n, st.status,
         st.status_reason AS reason, st.status_changed_by AS changed_by, st.status_changed_at AS changed_at
       FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id ORDER BY d.id`,
    )
    expect(rows).toHaveLength(50)
    for (const row of rows) {
      const i = row.n
      const changed = i % 5 !== 0 || i % 10 === 5
      expect(row.status).toBe(['dead', 'replayed', 'resolved', 'held', 'replaying'][i % 5])
      expect(row.reason).toBe(i % 5 === 2 ? `duplicate of ${i}` : i % 10 === 5 ? 'nacked by the broker' : null)
      expect(row.changed_by).toBe(changed ? `ops-${i}` : null)
      expect(row.changed_at?.toISOString() ?? null).toBe(changed ? new Date(Date.parse('2026-11-20T00:00:00Z') + i * 1000).toISOString() : null)
    }
  })

  it('writes a status row only for messages that are not plainly dead, each with its message\'s failed_at', async () => {
    const { rows } = await db.sql.query<{ n: number; same_failed_at: boolean | null }>(
      `SELECT row_number() OVER (ORDER BY d.id)::int AS n, st.failed_at = d.failed_at AS same_failed_at
       FROM dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id ORDER BY d.id`,
    )
    for (const row of rows) expect([row.n, row.same_failed_at]).toEqual([row.n, row.n % 5 !== 0 || row.n % 10 === 5 ? true : null])
  })

  it('leaves no status in dead_letters, and moves the status indexes', async () => {
    const { rows: columns } = await db.sql.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'dead_letters' AND column_name LIKE 'status%'`,
    )
    expect(columns).toEqual([])
    const { rows: indexes } = await db.sql.query<{ name: string }>(
      `SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid IN ('dead_letters'::regclass, 'dead_letter_states'::regclass) ORDER BY 1`,
    )
    const names = indexes.map((i) => i.name)
    expect(names).toEqual(expect.arrayContaining(['dead_letter_states_status_idx', 'dead_letter_states_retention_idx', 'dead_letter_states_held_idx', 'dead_letters_held_from_idx']))
    expect(names.filter((n) => ['dead_letters_status_idx', 'dead_letters_retention_idx', 'dead_letters_held_idx'].includes(n))).toEqual([])
  })
})
