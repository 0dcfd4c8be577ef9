import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Sql } from '@/lib/server/platform/db/sql'
import { startDrainer } from '@/lib/server/engines/drainer/drainer'
import { setLogOutput } from '@/lib/server/platform/log'
import { AMQP_URL, uniqueName } from '../helpers/broker'
import type { LogEntry } from '../helpers/capture-logs'
import { createTestDb, type TestDb } from '../helpers/test-db'

/** The drainer keeps a source's problem in sources.last_error for the UI; when that write fails, the log says so. */
describe("a source's error the database does not take", () => {
  let db: TestDb

  beforeAll(async () => {
    db = await createTestDb()
  })
  afterAll(async () => db?.drop())

  it('is logged with the error it meant to record', async () => {
    const queue = uniqueName('elsewhere_dlq')
    // A source on a vhost AMQP_URL does not connect to: the drainer records why it is not drained.
    await db.sql.query(`INSERT INTO sources (vhost, queue) VALUES ('not-this-vhost', $1)`, [queue])
    const refusing: Sql = {
      ...db.background,
      query: ((text: string, params?: unknown[], options?: { name?: string }) =>
        text.includes('last_error') ? Promise.reject(new Error('the database refused the write')) : db.background.query(text, params, options)) as Sql['query'],
    }
    const entries: LogEntry[] = []
    const restore = setLogOutput({ format: 'json', write: (line) => void entries.push(JSON.parse(line) as LogEntry) })
    const drainer = startDrainer({
      db: { ...db, background: refusing },
      config: { AMQP_URL, LAZARUS_DRAIN_BATCH: 10, LAZARUS_DRAIN_PREFETCH: 20, LAZARUS_DRAIN_FLUSH_MS: 20, LAZARUS_MAX_BODY_BYTES: 1024 },
      reconcileMs: 200,
    })
    try {
      await vi.waitFor(() => expect(entries.find((e) => e.msg.startsWith('cannot record the source'))).toBeDefined(), { timeout: 20_000, interval: 100 })
    } finally {
      await drainer.stop()
      restore()
    }
    expect(entries.find((e) => e.msg.startsWith('cannot record the source'))).toMatchObject({
      level: 'warn',
      scope: 'drainer',
      queue,
      sourceError: expect.stringContaining('vhost "not-this-vhost" is not drained'),
      error: 'the database refused the write',
    })
  })
})
