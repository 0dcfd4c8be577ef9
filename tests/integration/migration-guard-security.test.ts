import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDb, type Db } from '@/lib/server/platform/db'
import { applyMigrations, loadMigrations } from '@/lib/server/platform/db/migrate'

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const MIGRATION = '20261205100000_guard_security'

/**
 * Messages held before the held-unexpected rule existed are judged by it once, when the migration runs: a held row no
 * pause explains gets the flag (and so is never released automatically); the others are left as they were.
 */
describe(`migration ${MIGRATION}`, () => {
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
    await applyMigrations({ sql: db.sql, migrations: all.filter((m) => m.name < MIGRATION) })

    const hold = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue, kind) VALUES ('lazarus.hold', 'hold') RETURNING id::text`)).rows[0].id
    const dlq = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('orders.dlq') RETURNING id::text`)).rows[0].id
    const group = (await db.sql.query<{ id: string }>(
      `INSERT INTO error_groups (signature, title, first_seen, last_seen) VALUES ('lazarus:held', 'Held while paused', now(), now()) RETURNING id::text`,
    )).rows[0].id
    // order-1 of orders.work was paused from 60 to 30 minutes ago.
    await db.sql.query(
      `INSERT INTO pauses (vhost, queue, entity_key, status, created_by, created_at, resumed_at, resumed_by, version)
       VALUES ('/', 'orders.work', 'order-1', 'resumed', 'ann', now() - interval '60 minutes', now() - interval '30 minutes', 'ann', 1)`,
    )
    const rows: [number, string, string | null, string | null, number, string | null][] = [
      // n, source, held_from, entity, minutes ago, status (null: no status row, i.e. dead)
      [1, hold, 'orders.work', 'order-1', 35, 'held'], // held while the pause was open
      [2, hold, 'orders.work', 'order-1', 25, 'held'], // 5 minutes after it ended: a late guard
      [3, hold, 'orders.work', 'order-1', 5, 'held'], // 25 minutes after it ended
      [4, hold, 'victim.work', 'order-1', 35, 'held'], // a queue never paused
      [5, hold, 'victim.work', 'order-1', 35, 'replaying'], // already being sent back: left alone
      [6, hold, null, null, 35, 'held'], // no origin at all (flagged held-without-origin when stored)
      [7, dlq, null, 'order-1', 35, null], // a dead letter, not a held message
    ]
    for (const [n, source, heldFrom, entity, minutes, status] of rows) {
      const { rows: stored } = await db.sql.query<{ id: string }>(
        `INSERT INTO dead_letters (source_id, group_id, fingerprint, body, body_size, body_encoding, properties, headers,
           delivery_exchange, delivery_routing_key, redelivered, failed_at, failure_kind, framework, held_from, entity_key)
         VALUES ($1::bigint, $2::bigint, sha256(convert_to($3::text, 'UTF8')), convert_to($3::text, 'UTF8'), length($3::text), 'json', '{}'::jsonb, '{}'::json,
           '', 'lazarus.hold', false, now() - $4::int * interval '1 minute', 'unknown', 'lazarus', $5, $6)
         RETURNING id::text`,
        [source, group, JSON.stringify({ n }), minutes, heldFrom, entity],
      )
      if (status) {
        await db.sql.query(`INSERT INTO dead_letter_states (dead_letter_id, status, failed_at) SELECT id, $2, failed_at FROM dead_letters WHERE id = $1::bigint`, [stored[0].id, status])
      }
    }
    expect(await applyMigrations({ sql: db.sql })).toContain(MIGRATION)
  })

  afterAll(async () => {
    await db?.close().catch(() => {})
    const admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  })

  it('flags the held rows no pause explains, and only those', async () => {
    const { rows } = await db.sql.query<{ n: number; flags: string[] }>(
      `SELECT (convert_from(body, 'UTF8')::jsonb->>'n')::int AS n, flags FROM dead_letters ORDER BY 1`,
    )
    expect(rows.map((r) => [r.n, r.flags])).toEqual([
      [1, []],
      [2, []],
      [3, ['held-unexpected']],
      [4, ['held-unexpected']],
      [5, []],
      [6, []],
      [7, []],
    ])
  })

  it('creates guard_heartbeats and the pause lookup index', async () => {
    const { rows } = await db.sql.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'guard_heartbeats' ORDER BY ordinal_position`,
    )
    // This migration's columns come first; later migrations add more (registry_version).
    expect(rows.map((r) => r.column_name).slice(0, 6)).toEqual(['vhost', 'queue', 'instance', 'guard_version', 'last_seen_at', 'first_seen_at'])
    const { rows: indexes } = await db.sql.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename IN ('pauses', 'guard_heartbeats') ORDER BY 1`)
    expect(indexes.map((i) => i.indexname)).toEqual(expect.arrayContaining(['pauses_vhost_queue_idx', 'guard_heartbeats_pkey']))
  })
})
