import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { encodeTypedTable, withTypedHeaders, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { principalFromApiToken } from '@/lib/server/auth/api-tokens'
import { createSession, principalFromSession } from '@/lib/server/auth/sessions'
import { openDb, type Db } from '@/lib/server/platform/db'
import { applyMigrations } from '@/lib/server/platform/db/migrate'
import type { Sql } from '@/lib/server/platform/db/sql'
import { updateGroup } from '@/lib/server/groups/update-group'
import { resolveMessages } from '@/lib/server/messages/resolve-messages'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { createTestUser, type TestUser } from '../helpers/auth'
import { brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { isolatePauseTopology } from '../helpers/pause-topology'
import { jobState } from '../helpers/replay'
import { closeTableGate } from '../helpers/table-gate'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { b64, EVERY_BROKER_TYPE } from '../helpers/typed-headers'
import { exited, spawnWorker } from '../helpers/worker-process'
import { composition } from '@/lib/server/platform/process/composition'

/**
 * docs/operations.md#backup-and-restore, proven: a `pg_dump` of the database of a running Lazarus (a worker process
 * draining a DLQ that keeps receiving messages, and replaying a job, while the dump runs), restored with `pg_restore`
 * into a fresh database, is a Lazarus database as it was when the dump began: migrations up to date, every message
 * byte for byte (body, typed headers, properties), statuses, groups, counters, search, replay jobs, users, sessions
 * and tokens, and the sessions and tokens still sign in.
 */
const execFileAsync = promisify(execFile)
const topology = isolatePauseTopology()
const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SESSION_LIMITS = { idleMinutes: 480, maxHours: 24 }

const dlq = uniqueName('backup_dlq')
const work = uniqueName('backup_work')
/** Stored before the dump begins: these must all come back. */
const BEFORE = 240
/** Replayed while the dump runs (a slow job, so it is mid-way when the dump starts). */
const REPLAYED = 120
const REPLAY_RATE = 30
/**
 * A table the test holds locked while pg_dump runs. pg_dump takes its snapshot, then locks every table it dumps, so it
 * waits on this one with its snapshot taken: Lazarus writes meanwhile, and the test sees it do so before it lets the dump
 * go on. However fast or slow the machine, the dump overlaps writes.
 */
const DUMP_GATE = 'backup_test_dump_gate'

/** Three bodies that JSON or text would not keep: random bytes, text that is not UTF-8, and ordinary JSON. */
function bodyOf(n: number): Buffer {
  if (n % 3 === 0) return Buffer.concat([Buffer.from([0, 0xff, 0xfe, n % 256]), randomBytesFor(n)])
  if (n % 3 === 1) return Buffer.from([0x48, 0xe9, 0x20, 0xff, 0x28, n % 256])
  return Buffer.from(JSON.stringify({ orderId: `o-${n}`, amount: n / 7 }))
}
const randomCache = new Map<number, Buffer>()
function randomBytesFor(n: number): Buffer {
  if (!randomCache.has(n)) randomCache.set(n, randomBytes(64))
  return randomCache.get(n)!
}

/** Every AMQP type the broker carries, the message's own number as an int64, an x-death naming the work queue. */
function headersOf(n: number): TypedTable {
  return {
    'msg-no': { t: 'l', v: String(n) },
    'x-error-type': { t: 'S', v: `com.acme.Failure${n % 3}` },
    'x-error-message': { t: 'S', v: `order o-${n} failed` },
    ...EVERY_BROKER_TYPE,
    'longstr-with-nul': { t: 'S', b64: b64(Buffer.from(`a\u0000${n}`)) },
    'x-first-death-exchange': { t: 'S', v: '' },
    'x-first-death-queue': { t: 'S', v: work },
    'x-first-death-reason': { t: 'S', v: 'rejected' },
    'x-death': {
      t: 'A',
      v: [{ t: 'F', v: { count: { t: 'l', v: '3' }, exchange: { t: 'S', v: '' }, queue: { t: 'S', v: work }, reason: { t: 'S', v: 'rejected' }, 'routing-keys': { t: 'A', v: [{ t: 'S', v: work }] }, time: { t: 'T', v: String(1764500000 + n) } } }],
    },
  }
}

async function pgTool(tool: 'pg_dump' | 'pg_restore', args: string[]): Promise<void> {
  try {
    await execFileAsync(tool, args, { maxBuffer: 16 * 1024 * 1024 })
  } catch (error) {
    const { stderr, code } = error as { stderr?: string; code?: string }
    if (code === 'ENOENT') throw new Error(`${tool} not found: install PostgreSQL's client programs (Debian: postgresql-client)`)
    throw new Error(`${tool} failed: ${stderr ?? (error as Error).message}`)
  }
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

type MessageRow = { id: string; fingerprint: Buffer; body: Buffer; headers: string; properties: string; rest: string; n: number }

/** Every stored message, the columns JSON would alter read as bytes or text, the rest as one JSON text. */
async function messages(sql: Sql): Promise<MessageRow[]> {
  const { rows } = await sql.query<MessageRow>(
    `SELECT id::text, fingerprint, body, headers::text AS headers, properties::text AS properties,
       (to_jsonb(d) - 'body' - 'headers' - 'properties' - 'fingerprint')::text AS rest, (properties->>'messageId')::int AS n
     FROM dead_letters d ORDER BY id`,
  )
  return rows.map((r) => ({ ...r, body: Buffer.from(r.body), fingerprint: Buffer.from(r.fingerprint) }))
}

/** A table's rows as JSON text, by id. */
async function rowsById(sql: Sql, table: string, key = 'id'): Promise<Map<string, string>> {
  const { rows } = await sql.query<{ key: string; row: string }>(`SELECT t.${key}::text AS key, to_jsonb(t)::text AS row FROM ${table} t ORDER BY 1`)
  return new Map(rows.map((r) => [r.key, r.row]))
}

async function count(sql: Sql, text: string): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(text)
  return rows[0].n
}

describe('backup and restore of a running Lazarus', () => {
  const publish = (n: number) =>
    channel.sendToQueue(dlq, bodyOf(n), { messageId: String(n), headers: withTypedHeaders(headersOf(n)), timestamp: 1764500000, type: 'backup.test', correlationId: `c-${n}` })
  let db: TestDb
  let restored: Db | undefined
  let restoredName: string
  let restoredUrl: string
  let connection: ChannelModel
  let channel: Channel
  let worker: ReturnType<typeof spawnWorker> | undefined
  let dir: string
  let user: TestUser
  let session: string
  let replayJob: ReplayCreatedDto
  let stopPublishing: (() => Promise<number>) | undefined
  const counts = { beforeDump: 0, whileDumping: 0, restored: 0 }

  beforeAll(async () => {
    topology.assertConfigured()
    dir = await mkdtemp(path.join(tmpdir(), 'lazarus-backup-'))
    db = await createTestDb('lazarus_backup')
    // The dump's gate (see the first test). It is in the dump and the restored copy too; nothing else reads it.
    await db.sql.query(`CREATE TABLE ${DUMP_GATE} ()`)
    restoredName = `${db.name}_restored`
    const url = new URL(db.url)
    url.pathname = `/${restoredName}`
    restoredUrl = url.toString()

    connection = await brokerConnection()
    channel = await connection.createChannel()
    await channel.assertQueue(dlq, { durable: false })
    await channel.assertQueue(work, { durable: false })
    for (let n = 0; n < BEFORE; n++) publish(n)

    // `npm run worker`, as production runs it: drainer, search indexer, replay executor and the rest, in its own process.
    // Small batches: arrivals are stored every few milliseconds rather than once a second, so the dump overlaps them.
    worker = spawnWorker({ DATABASE_URL: db.url, LAZARUS_SOURCES: dlq, LAZARUS_REPLAY_POLL_MS: '100', LAZARUS_DRAIN_BATCH: '20' })
    await waitFor(async () => (await count(db.sql, 'SELECT count(*)::int AS n FROM dead_letters')) === BEFORE || (worker!.exitCode !== null && 'exited'), {
      timeoutMs: 60_000,
      what: 'the worker to store the first messages',
    })
    if (worker.exitCode !== null) throw new Error(`worker exited:\n${worker.output()}`)

    // What a backup must keep besides messages: statuses, triage, people, sessions, tokens, a replay in progress.
    const ids = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters ORDER BY id')).rows.map((r) => r.id)
    await resolveMessages({ db, input: { selection: { ids: ids.slice(0, 30) }, reason: 'fixed upstream, backup test' }, actor: 'backup-test' })
    const { rows: groups } = await db.sql.query<{ id: string }>('SELECT id::text FROM error_groups ORDER BY id LIMIT 1')
    await updateGroup({ db, id: groups[0].id, input: { status: 'acknowledged', note: 'looking into it', ticketUrl: 'https://tickets.example/LZ-1' }, actor: 'backup-test' })
    user = await createTestUser(db, 'backup-operator', [{ role: 'operator' }])
    ;({ secret: session } = await createSession({ sql: db.sql, userId: user.userId, method: 'local', limits: SESSION_LIMITS, ip: '127.0.0.1', userAgent: 'backup test' }))
    replayJob = (await createReplay({
      db,
      control: composition().control, replayWork: composition().replayWork,
      input: { selection: { ids: ids.slice(100, 100 + REPLAYED) }, target: { type: 'queue' }, ratePerSecond: REPLAY_RATE, confirmCount: REPLAYED },
      actor: 'backup-test',
    })) as ReplayCreatedDto
    expect(replayJob.plan.replayable).toBe(REPLAYED)
  })

  afterAll(async () => {
    await stopPublishing?.().catch(() => 0)
    if (worker) {
      worker.kill('SIGTERM')
      await exited(worker)
    }
    await restored?.close().catch(() => {})
    await adminQuery(`DROP DATABASE IF EXISTS ${restoredName} WITH (FORCE)`).catch(() => {})
    await channel?.deleteQueue(dlq).catch(() => {})
    await channel?.deleteQueue(work).catch(() => {})
    await connection?.close().catch(() => {})
    await topology.cleanup()
    await db?.drop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('dumps the database while the worker drains and replays', async () => {
    // The replay is under way: some messages out, most still to go.
    await waitFor(async () => (await jobState(db.sql, replayJob.id)).confirmed >= 10, { timeoutMs: 30_000, what: 'the replay to start' })
    // New dead letters keep arriving while the dump runs.
    let n = BEFORE
    let publishing = true
    const publisher = (async () => {
      while (publishing) {
        for (let i = 0; i < 10; i++) publish(n++)
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      return n
    })()
    stopPublishing = async () => {
      publishing = false
      return publisher
    }
    await waitFor(async () => (await count(db.sql, 'SELECT count(*)::int AS n FROM dead_letters')) > BEFORE + 20, { what: 'new arrivals to be stored' })

    counts.beforeDump = await count(db.sql, 'SELECT count(*)::int AS n FROM dead_letters')
    const gate = await closeTableGate(db.url, DUMP_GATE)
    let dumped: Promise<void> | undefined
    try {
      dumped = pgTool('pg_dump', ['--format=custom', `--file=${path.join(dir, 'lazarus.dump')}`, db.url])
      dumped.catch(() => {})
      await gate.waiters(1, 'pg_dump to take its snapshot and wait on the gate')
      // Everything read from here on is at least what the snapshot holds.
      counts.whileDumping = await count(db.sql, 'SELECT count(*)::int AS n FROM dead_letters')
      const jobAtDump = await jobState(db.sql, replayJob.id)
      expect(jobAtDump.status).toBe('running')
      expect(jobAtDump.confirmed).toBeLessThan(REPLAYED)
      // The dump is under way and Lazarus goes on writing: new messages are stored after its snapshot.
      await waitFor(async () => (await count(db.sql, 'SELECT count(*)::int AS n FROM dead_letters')) > counts.whileDumping, { what: 'arrivals stored during the dump' })
    } finally {
      await gate.release()
    }
    await dumped
    const published = await stopPublishing()
    stopPublishing = undefined
    expect((await stat(path.join(dir, 'lazarus.dump'))).size).toBeGreaterThan(0)

    // Let the worker finish what it was doing, so the source can be compared with the restored copy at rest.
    await waitFor(async () => (await count(db.sql, 'SELECT count(*)::int AS n FROM dead_letters')) === published || null, { timeoutMs: 60_000, what: 'every arrival stored' })
    await waitFor(async () => ['completed', 'failed', 'cancelled'].includes((await jobState(db.sql, replayJob.id)).status) || null, { timeoutMs: 60_000, what: 'the replay to end' })
  })

  it('restores into a fresh database that migrations see as up to date', async () => {
    await adminQuery(`CREATE DATABASE ${restoredName}`)
    await pgTool('pg_restore', ['--no-owner', '--no-privileges', '--exit-on-error', '--single-transaction', `--dbname=${restoredUrl}`, path.join(dir, 'lazarus.dump')])
    restored = await openDb({ databaseUrl: restoredUrl, migrate: false })
    expect(await applyMigrations({ sql: restored.sql })).toEqual([])
    // And opened the way Lazarus opens it at start-up.
    const again = await openDb({ databaseUrl: restoredUrl })
    await again.close()
  })

  it('keeps every message byte for byte: body, typed headers, properties, derived columns', async () => {
    const copy = await messages(restored!.sql)
    const original = new Map((await messages(db.sql)).map((m) => [m.id, m]))
    counts.restored = copy.length
    // The dump is one snapshot: everything stored before it began, nothing stored after its snapshot (Lazarus stored more
    // while it ran).
    expect(copy.length).toBeGreaterThanOrEqual(counts.beforeDump)
    expect(copy.length).toBeLessThanOrEqual(counts.whileDumping)
    for (const m of copy) {
      const o = original.get(m.id)!
      expect(m.body.equals(o.body), `body of ${m.id}`).toBe(true)
      expect(m.fingerprint.equals(o.fingerprint)).toBe(true)
      expect(m.headers).toBe(o.headers)
      expect(m.properties).toBe(o.properties)
      expect(m.rest).toBe(o.rest)
      // And as published: the exact bytes, every header with its type, in its order.
      expect(m.body.equals(bodyOf(m.n)), `body of message ${m.n}`).toBe(true)
      expect(m.headers).toBe(JSON.stringify(headersOf(m.n)))
      expect(encodeTypedTable(JSON.parse(m.headers) as TypedTable).equals(encodeTypedTable(headersOf(m.n)))).toBe(true)
    }
    for (let n = 0; n < BEFORE; n++) expect(copy.some((m) => m.n === n), `message ${n}`).toBe(true)
  })

  it('keeps statuses, triage, people, sessions and tokens', async () => {
    const sql = restored!.sql
    const resolved = await count(sql, `SELECT count(*)::int AS n FROM dead_letter_states WHERE status = 'resolved' AND status_reason = 'fixed upstream, backup test'`)
    expect(resolved).toBe(30)
    const [group] = (await sql.query<{ status: string; note: string; ticket_url: string }>(`SELECT status, note, ticket_url FROM error_groups ORDER BY id LIMIT 1`)).rows
    expect(group).toEqual({ status: 'acknowledged', note: 'looking into it', ticket_url: 'https://tickets.example/LZ-1' })
    // Groups keep their ids (messages and alert rules refer to them), signatures, titles and triage state.
    const groups = (s: Sql) => s.query('SELECT id::text, signature, title, error_type, message_pattern, status, note, ticket_url FROM error_groups ORDER BY id').then((r) => r.rows)
    expect(await groups(sql)).toEqual(await groups(db.sql))
    for (const table of ['users', 'role_bindings', 'api_tokens', 'sessions', 'sources']) {
      const copy = await rowsById(sql, table)
      const original = await rowsById(db.sql, table)
      if (table === 'sources') {
        // drained_count and last_drain_at moved on after the dump; the settings did not.
        const settings = (row: string) => {
          const { drained_count: _count, last_drain_at: _at, updated_at: _u, ...rest } = JSON.parse(row) as Record<string, unknown>
          return rest
        }
        expect([...copy.keys()]).toEqual([...original.keys()])
        for (const [id, row] of copy) expect(settings(row)).toEqual(settings(original.get(id)!))
      } else {
        expect(copy, table).toEqual(original)
      }
    }
    // Every audit entry in the copy is the original's (the replay's end was recorded after the dump).
    const audit = await rowsById(db.sql, 'audit_log')
    for (const [id, row] of await rowsById(sql, 'audit_log')) expect(row).toBe(audit.get(id))
    // Only hashes are stored, and the hashes came along: the same secrets sign in on the restored database.
    expect(await principalFromApiToken({ sql, secret: user.token })).toMatchObject({ kind: 'token', userId: user.userId })
    expect(await principalFromSession({ sql, secret: session, limits: SESSION_LIMITS })).toMatchObject({ kind: 'user', userId: user.userId })
  })

  it('restores a consistent snapshot: counters, search and the replay in progress agree with the rows', async () => {
    const sql = restored!.sql
    // Counters are kept in the transactions that store and move messages, so one snapshot has them equal to the rows.
    expect(
      await count(sql, `SELECT count(*)::int AS n FROM error_groups g
        WHERE g.count <> (SELECT count(*) FROM dead_letters d WHERE d.group_id = g.id)
           OR g.resolved_count <> (SELECT count(*) FROM dead_letters d JOIN dead_letter_states st ON st.dead_letter_id = d.id WHERE d.group_id = g.id AND st.status = 'resolved')
           OR g.replayed_count <> (SELECT count(*) FROM dead_letters d JOIN dead_letter_states st ON st.dead_letter_id = d.id WHERE d.group_id = g.id AND st.status = 'replayed')`),
    ).toBe(0)
    expect(
      await count(sql, `SELECT count(*)::int AS n FROM group_source_stats s
        WHERE s.count <> (SELECT count(*) FROM dead_letters d WHERE d.group_id = s.group_id AND d.source_id = s.source_id)`),
    ).toBe(0)
    expect(await count(sql, `SELECT coalesce(sum(drained_count), 0)::int AS n FROM sources`)).toBe(counts.restored)
    expect(await count(sql, `SELECT coalesce(sum(count), 0)::int AS n FROM group_arrivals`)).toBe(counts.restored)
    // Every message is either indexed for search or in the backlog the indexer (and a search) reads.
    expect(
      await count(sql, `SELECT count(*)::int AS n FROM dead_letters d
        WHERE NOT EXISTS (SELECT 1 FROM dead_letter_search s WHERE s.dead_letter_id = d.id)
          AND NOT EXISTS (SELECT 1 FROM search_backlog b WHERE d.id BETWEEN b.first_id AND b.last_id)`),
    ).toBe(0)
    // The replay as it stood: each item's outcome matches its message's status, and the job's counters its items.
    const { rows: job } = await sql.query<{ status: string; total: number; confirmed: number; failed: number; unroutable: number; skipped: number }>(
      'SELECT status, total, confirmed, failed, unroutable, skipped FROM replay_jobs WHERE id = $1::bigint',
      [replayJob.id],
    )
    expect(job[0].total).toBe(REPLAYED)
    const { rows: items } = await sql.query<{ item: string; message: string; n: number }>(
      `SELECT i.status AS item, coalesce(st.status, 'dead') AS message, count(*)::int AS n
       FROM replay_items i LEFT JOIN dead_letter_states st ON st.dead_letter_id = i.dead_letter_id
       WHERE i.job_id = $1::bigint GROUP BY 1, 2 ORDER BY 1, 2`,
      [replayJob.id],
    )
    for (const row of items) {
      const expected = row.item === 'confirmed' ? 'replayed' : row.item === 'pending' || row.item === 'in_flight' ? 'replaying' : 'dead'
      expect(row.message, `items ${row.item}`).toBe(expected)
    }
    const confirmed = items.filter((r) => r.item === 'confirmed').reduce((sum, r) => sum + r.n, 0)
    expect(job[0].confirmed).toBe(confirmed)
    expect(confirmed).toBeGreaterThan(0)
  })
})
