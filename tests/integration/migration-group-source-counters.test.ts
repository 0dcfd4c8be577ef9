import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDb, type Db } from '@/lib/server/platform/db'
import { applyMigrations, loadMigrations } from '@/lib/server/platform/db/migrate'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { ingestRow } from '../helpers/ingest-row'

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const MIGRATION = '20261205200000_group_source_counters'
const BASE = Date.parse('2026-11-20T10:00:00Z')
const STATUSES = ['dead', 'replayed', 'resolved', 'held', 'replaying'] as const

/** Message i of the database the migration finds: its source, group, failure time, facets and status. */
const message = (i: number) => ({
  source: i % 2 === 0 ? 'a' : 'b',
  group: `v1:g${i % 3}`,
  failedAt: BASE + i * 20_000,
  service: i % 4 === 0 ? null : `svc-${i % 2 === 0 ? 'a' : 'b'}`,
  version: i % 7 === 0 ? null : `${1 + (i % 3)}.0`,
  kind: ['invalid', 'transient', 'expired'][i % 3 === 0 ? i % 2 : 2],
  status: STATUSES[i % 5],
})
const N = 90

/**
 * A database migrated before the per-(group, source) counters existed gets them from what it stores: each pair's
 * count, replayed and resolved counts, first and last failure, facet values and per-minute buckets. Ingestion then
 * carries on from there.
 */
describe(`migration ${MIGRATION}`, () => {
  const name = `lazarus_test_${randomBytes(4).toString('hex')}`
  let db: Db
  const sourceIds: Record<string, string> = {}
  const groupIds: Record<string, string> = {}

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

    for (const key of ['a', 'b']) {
      sourceIds[key] = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ($1) RETURNING id::text`, [`${key}.dlq`])).rows[0].id
    }
    for (const signature of ['v1:g0', 'v1:g1', 'v1:g2']) {
      groupIds[signature] = (await db.sql.query<{ id: string }>(
        `INSERT INTO error_groups (signature, title, first_seen, last_seen) VALUES ($1, $1, now(), now()) RETURNING id::text`, [signature],
      )).rows[0].id
    }
    const messages = Array.from({ length: N }, (_, k) => message(k + 1))
    const col = <T>(pick: (m: ReturnType<typeof message>) => T) => messages.map(pick)
    await db.sql.query(
      `WITH stored AS (
         INSERT INTO dead_letters (source_id, group_id, fingerprint, body, body_size, body_encoding, properties, headers,
           delivery_exchange, delivery_routing_key, redelivered, failed_at, failure_kind, framework, service, service_version)
         SELECT m.source_id, m.group_id, sha256(convert_to(m.n::text, 'UTF8')), convert_to('{}', 'UTF8'), 2, 'json', '{}'::jsonb, '{}'::json,
           'dlx', 'k', false, m.failed_at, m.kind, 'plain-dlx', m.service, m.version
         FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[])
           WITH ORDINALITY AS m(source_id, group_id, failed_at, kind, service, version, status, n)
         RETURNING id, failed_at, fingerprint
       )
       INSERT INTO dead_letter_states (dead_letter_id, status, failed_at)
       SELECT s.id, m.status, s.failed_at FROM stored s
       JOIN unnest($7::text[]) WITH ORDINALITY AS m(status, n) ON s.fingerprint = sha256(convert_to(m.n::text, 'UTF8'))
       WHERE m.status <> 'dead'`,
      [
        col((m) => sourceIds[m.source]), col((m) => groupIds[m.group]), col((m) => new Date(m.failedAt)), col((m) => m.kind),
        col((m) => m.service), col((m) => m.version), col((m) => m.status),
      ],
    )
    expect(await applyMigrations({ sql: db.sql })).toContain(MIGRATION)
  })

  afterAll(async () => {
    await db?.close().catch(() => {})
    const admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  })

  /** What each (group, source) should hold, worked out from the messages in JavaScript. */
  function expectedStats() {
    const pairs = new Map<string, { count: number; replayed: number; resolved: number; first: number; last: number; services: Set<string>; versions: Set<string>; kinds: Set<string> }>()
    for (let i = 1; i <= N; i++) {
      const m = message(i)
      const key = `${groupIds[m.group]}/${sourceIds[m.source]}`
      const p = pairs.get(key) ?? { count: 0, replayed: 0, resolved: 0, first: Infinity, last: -Infinity, services: new Set(), versions: new Set(), kinds: new Set() }
      p.count++
      if (m.status === 'replayed') p.replayed++
      if (m.status === 'resolved') p.resolved++
      p.first = Math.min(p.first, m.failedAt)
      p.last = Math.max(p.last, m.failedAt)
      if (m.service) p.services.add(m.service)
      if (m.version) p.versions.add(m.version)
      p.kinds.add(m.kind)
      pairs.set(key, p)
    }
    return [...pairs.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, p]) => ({
      key, count: p.count, replayed: p.replayed, resolved: p.resolved, first: new Date(p.first).toISOString(), last: new Date(p.last).toISOString(),
      services: [...p.services].sort(), versions: [...p.versions].sort(), kinds: [...p.kinds].sort(),
    }))
  }

  async function storedStats() {
    const { rows } = await db.sql.query<{ key: string; count: number; replayed: number; resolved: number; first: Date; last: Date; services: string[]; versions: string[]; kinds: string[] }>(
      `SELECT group_id || '/' || source_id AS key, count::int, replayed_count::int AS replayed, resolved_count::int AS resolved,
         first_seen AS first, last_seen AS last, services, service_versions AS versions, failure_kinds AS kinds
       FROM group_source_stats ORDER BY 1`,
    )
    return rows.map((r) => ({ ...r, first: r.first.toISOString(), last: r.last.toISOString() }))
  }

  it('counts each (group, source) pair from its stored messages and their statuses', async () => {
    const want = expectedStats()
    expect(want).toHaveLength(6)
    expect(await storedStats()).toEqual(want)
  })

  it('rebuilds the per-minute buckets of each (group, source) pair', async () => {
    const want = new Map<string, number>()
    for (let i = 1; i <= N; i++) {
      const m = message(i)
      const key = `${groupIds[m.group]}/${sourceIds[m.source]}/${new Date(Math.floor(m.failedAt / 60_000) * 60_000).toISOString()}`
      want.set(key, (want.get(key) ?? 0) + 1)
    }
    const { rows } = await db.sql.query<{ group_id: string; source_id: string; minute: Date; count: number }>(
      'SELECT group_id::text, source_id::text, minute, count FROM group_source_arrivals',
    )
    expect(new Map(rows.map((r) => [`${r.group_id}/${r.source_id}/${r.minute.toISOString()}`, r.count]))).toEqual(want)
  })

  it('lets ingestion carry on from the backfilled counters', async () => {
    const failedAt = new Date(BASE + 2 * 3_600_000)
    const result = await storeBatch({
      sql: db.sql,
      sourceId: sourceIds.a, sourceLabel: 'a.dlq',
      rows: [ingestRow({ signature: 'v1:g1', title: 'v1:g1', failedAt, service: 'svc-new', serviceVersion: '1.0', failureKind: 'invalid' })],
    })
    expect(result.inserted).toBe(1)
    const key = `${groupIds['v1:g1']}/${sourceIds.a}`
    const before = expectedStats().find((p) => p.key === key)!
    expect((await storedStats()).find((p) => p.key === key)).toEqual({
      ...before, count: before.count + 1, last: failedAt.toISOString(),
      services: [...new Set([...before.services, 'svc-new'])].sort(), versions: [...new Set([...before.versions, '1.0'])].sort(),
      kinds: [...new Set([...before.kinds, 'invalid'])].sort(),
    })
    const { rows } = await db.sql.query<{ count: number }>(
      'SELECT count FROM group_source_arrivals WHERE group_id = $1::bigint AND source_id = $2::bigint AND minute = $3',
      [groupIds['v1:g1'], sourceIds.a, failedAt],
    )
    expect(rows).toEqual([{ count: 1 }])
  })
})
