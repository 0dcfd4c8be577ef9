import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { bySize, SOAK } from '../helpers/soak'
import { createTestDb, type TestDb } from '../helpers/test-db'

const run = promisify(execFile)
const ROWS = bySize(40_000, 200_000)
/** Soak size only: a streaming export of 200,000 rows sits near 150 MiB; loading it whole would need several GiB. */
const MAX_RSS_MIB = 400
/** The heap every export runs in: the whole export, 114 MiB at 40,000 rows, cannot fit in it. */
const HEAP_MIB = 64

type ExportRun = { status: number; lines: number; bytes: number; seconds: number; peakRssMiB: number }

describe(`a ${ROWS.toLocaleString('en')}-row export`, () => {
  let db: TestDb

  beforeAll(async () => {
    db = await createTestDb()
    const { rows: [source] } = await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('memory.dlq') RETURNING id::text`)
    const { rows: [group] } = await db.sql.query<{ id: string }>(
      `INSERT INTO error_groups (signature, title, first_seen, last_seen, count) VALUES ('v1:memory', 'MemoryTest', now(), now(), $1) RETURNING id::text`,
      [ROWS],
    )
    // Only the index an export walks: the others would just slow the load down.
    const { rows: indexes } = await db.sql.query<{ name: string }>(
      `SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid = 'dead_letters'::regclass AND NOT indisprimary AND NOT indisunique
         AND indexrelid::regclass::text <> 'dead_letters_failed_at_idx'`,
    )
    for (const { name } of indexes) await db.sql.query(`DROP INDEX ${name}`)
    // ~600-byte JSON bodies with an e-mail address each (so redaction works on every row), typed headers with a stack.
    // The load is setup, not what is measured: on the background pool, which has no statement timeout (a busy machine
    // takes longer than the request pool allows).
    await db.background.query(
      `INSERT INTO dead_letters (source_id, group_id, fingerprint, body, body_size, body_encoding, body_preview, properties, headers, x_death,
         delivery_exchange, delivery_routing_key, redelivered, failed_at, error_type, error_message, error_stack, failure_kind, framework, service, service_version)
       SELECT $1::bigint, $2::bigint, sha256(convert_to(i::text, 'UTF8')), convert_to(b.text, 'UTF8'), octet_length(b.text), 'json', left(b.text, 512),
         jsonb_build_object('contentType', 'application/json', 'messageId', 'm-' || i),
         json_build_object('x-exception-message', json_build_object('t', 'S', 'v', 'failure ' || i),
           'x-exception-stacktrace', json_build_object('t', 'S', 'v', 'com.acme.MemException: failure ' || i || repeat(E'\n\tat com.acme.Service.call(Service.java:42)', 8)),
           'x-retries', json_build_object('t', 'I', 'v', 3)),
         '{"t":"A","v":[{"t":"F","v":{"count":{"t":"l","v":"1"},"queue":{"t":"S","v":"memory.q"}}}]}'::json,
         'dlx', 'memory', false, now() - i * interval '1 millisecond', 'MemException', 'failure ' || i, 'com.acme.MemException', 'exhausted', 'spring', 'memory', '1.0.0'
       FROM generate_series(1, $3::int) i
       CROSS JOIN LATERAL (SELECT format('{"id":%s,"customer":{"email":"user%s@example.com","name":"Jane"},"notes":%s}', i, i, to_json(repeat('lorem ipsum dolor ', 28))) AS text) b`,
      [source.id, group.id, ROWS],
    )
    await db.sql.query('ANALYZE dead_letters')
  })
  afterAll(async () => db?.drop())

  /**
   * One export in a process of its own, so the peak RSS measured is the export's, with its JavaScript heap capped below
   * the export's size: rows held as strings would run it out of memory, and a heap left to grow as it likes makes
   * the RSS of two runs differ by whenever V8 chose to collect.
   */
  async function exportOnce(query: string): Promise<ExportRun> {
    const child = path.resolve(import.meta.dirname, 'export-memory-child.ts')
    const { stdout } = await run(process.execPath, [`--max-old-space-size=${HEAP_MIB}`, '--conditions=react-server', '--import', 'tsx', child, db.url, query], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: { ...process.env, LAZARUS_LOG_LEVEL: 'warn' },
      maxBuffer: 1024 * 1024,
    })
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as ExportRun
  }

  it('streams every row as JSON Lines with memory that does not grow with the rows', async () => {
    const whole = await exportOnce('format=jsonl')
    console.log(`export of ${ROWS} rows: ${(whole.bytes / 2 ** 20).toFixed(0)} MiB in ${whole.seconds.toFixed(1)} s, peak RSS ${whole.peakRssMiB} MiB`)
    expect(whole.status).toBe(200)
    expect(whole.lines).toBe(ROWS)
    // It streamed through a heap smaller than itself: held as strings, it would have needed twice its size.
    expect(whole.bytes).toBeGreaterThan(HEAP_MIB * 2 ** 20)

    // The newest fifth of the rows, through the same route.
    const { rows: [edge] } = await db.sql.query<{ at: Date; n: number }>(
      `SELECT at, (SELECT count(*)::int FROM dead_letters WHERE failed_at >= at) AS n
       FROM (SELECT failed_at AS at FROM dead_letters ORDER BY failed_at DESC OFFSET $1 LIMIT 1) e`,
      [ROWS / 5 - 1],
    )
    const part = await exportOnce(`format=jsonl&from=${encodeURIComponent(edge.at.toISOString())}`)
    console.log(`newest fifth: ${(part.bytes / 2 ** 20).toFixed(0)} MiB, peak RSS ${part.peakRssMiB} MiB`)
    expect(part.status).toBe(200)
    expect(part.lines).toBe(edge.n)
    // Five times the rows streamed, yet the process grew by far less than the extra bytes: held in memory outside the
    // heap (as buffers), they would have grown it by at least as much.
    const extraMiB = (whole.bytes - part.bytes) / 2 ** 20
    expect(extraMiB).toBeGreaterThan(40)
    expect(whole.peakRssMiB - part.peakRssMiB).toBeLessThan(extraMiB / 2)

    if (SOAK) {
      // The export is larger than the bound: it cannot have been held in memory.
      expect(whole.bytes).toBeGreaterThan(MAX_RSS_MIB * 2 ** 20)
      expect(whole.peakRssMiB).toBeLessThan(MAX_RSS_MIB)
    }
  })
})
