import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import * as sourceRoute from '@/app/api/sources/[id]/route'
import { getConfig } from '@/lib/server/platform/config'
import { createSource } from '@/lib/server/sources/create-source'
import { createSourceSchema } from '@/lib/shared/schemas/source'
import { createTestUser } from '../helpers/auth'
import { waitFor } from '../helpers/broker'
import { callRoute } from '../helpers/call-route'
import { openJetStreamBed, type JetStreamBed } from '../helpers/jetstream-bed'
import { createTestStream, NATS_URL, runFailingConsumer, uniqueNatsName, type TestStream } from '../helpers/nats'
import { exited, spawnWorker } from '../helpers/worker-process'

/**
 * Removal after capture (docs/jetstream.md#removing-captured-messages), against the real nats-server: an admin's
 * setting per JetStream source that deletes each captured message from its stream once it is stored. Off, the stream
 * keeps its messages; on, they leave the stream and the rows keep them whole; a delete the stream refuses leaves the
 * message and the row and says so on the source; a worker SIGKILLed between the commit and the delete leaves nothing
 * lost, doubled or undeleted once the next one has run.
 */
describe('JetStream removal after capture', () => {
  let bed: JetStreamBed
  /** PATCH /api/sources/{id}, as the provisioning admin unless another caller's credentials are given. */
  const patchSource = (id: string, body: unknown, authorization?: string) =>
    callRoute(sourceRoute, 'PATCH', new Request(`http://lazarus.test/api/sources/${id}`, {
      method: 'PATCH', headers: { 'content-type': 'application/json', ...(authorization && { authorization }) }, body: JSON.stringify(body),
    }), { id }, { anonymous: authorization !== undefined })
  const rowsOf = async (sourceId: string) =>
    (await bed.db.sql.query<{ body: Buffer; flags: string[]; seq: number; seen: number }>(
      `SELECT body, flags, (properties->>'streamSeq')::int AS seq, seen_count AS seen FROM dead_letters WHERE source_id = $1::bigint ORDER BY 3`, [sourceId],
    )).rows
  const inStream = async (stream: string) => (await bed.jsm.streams.info(stream)).state.messages
  const lastError = async (sourceId: string) => (await bed.db.sql.query<{ last_error: string | null }>('SELECT last_error FROM sources WHERE id = $1::bigint', [sourceId])).rows[0].last_error
  const failing = (stream: TestStream, texts: string[]) => texts.map((text) => ({ subject: `${stream.subject}.x`, data: new TextEncoder().encode(text) }))

  beforeAll(async () => {
    bed = await openJetStreamBed()
  })

  afterEach(async () => {
    await bed.stopCaptures()
    // One test's sources must not be captured by the next one's capture consumer.
    await bed.db.sql.query(`UPDATE sources SET enabled = false WHERE kind = 'jetstream'`)
  })

  afterAll(async () => bed?.close())

  it('leaves captured messages in their stream by default, and deletes them once stored when an admin turns it on', async () => {
    const { db, nc, jsm, streams, advisoryStream, addSource, startCapture, stored } = bed
    const stream = await createTestStream(jsm, { prefix: 'LZT_REMOVE' })
    streams.push(stream)
    const sourceId = await addSource(stream.name, 'worker')
    const capture = await startCapture('lzt-removal')

    // Default: stored, and still in the stream.
    await runFailingConsumer(nc, { stream: stream.name, consumer: 'worker', maxDeliver: 2, messages: failing(stream, ['{"kept":1}']), fails: () => 'nak' })
    await waitFor(async () => (await stored(sourceId)) === 1, { what: 'the first failure captured' })
    await waitFor(async () => (await jsm.consumers.info(advisoryStream, 'lzt-removal')).num_ack_pending === 0, { what: 'its advisory acknowledged' })
    expect(await inStream(stream.name)).toBe(1)
    expect((await jsm.streams.getMessage(stream.name, { seq: 1 }))?.string()).toBe('{"kept":1}')

    // Only an admin changes it (the route's permission), and only a JetStream source has a stream to delete from.
    const operator = await createTestUser(db, 'removal-operator', [{ role: 'operator' }])
    expect((await patchSource(sourceId, { removeAfterCapture: true }, operator.authorization)).status).toBe(403)
    const rabbit = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue, enabled) VALUES ('removal.dlq', false) RETURNING id::text`)).rows[0].id
    const refused = await patchSource(rabbit, { removeAfterCapture: true })
    expect(refused.status).toBe(422)
    expect((await refused.json()).error.message).toContain('is not a JetStream source')
    const turnedOn = await patchSource(sourceId, { removeAfterCapture: true })
    expect(turnedOn.status).toBe(200)
    expect(await turnedOn.json()).toMatchObject({ id: sourceId, removeAfterCapture: true })

    // On: the next failures leave the stream once stored; the row holds the whole message. The one captured before stays.
    const texts = Array.from({ length: 20 }, (_, i) => `{"removed":${i},"pad":"${'x'.repeat(100)}"}`)
    await runFailingConsumer(nc, { stream: stream.name, consumer: 'worker', maxDeliver: 2, messages: failing(stream, texts), fails: (data) => (data.includes('"removed"') ? 'nak' : 'ack') })
    await waitFor(async () => (await stored(sourceId)) === 21 && (await inStream(stream.name)) === 1, { what: '20 more captured and deleted from the stream' })
    const rows = await rowsOf(sourceId)
    expect(rows.map((r) => r.body.toString())).toEqual(['{"kept":1}', ...texts])
    for (const row of rows) expect(row.flags).not.toContain('message-gone')
    expect((await jsm.streams.getMessage(stream.name, { seq: 1 }))?.string()).toBe('{"kept":1}')
    expect(await jsm.streams.getMessage(stream.name, { seq: 2 })).toBeNull()
    expect(capture.status().removed).toBe(20)
    expect(await lastError(sourceId)).toBeNull()
  })

  it('keeps the row and the message, says why on the source and captures on, when the stream refuses the delete', async () => {
    const { db, nc, jsm, streams, advisoryStream, startCapture, stored } = bed
    const name = uniqueNatsName('LZT_DENY')
    const subject = name.toLowerCase()
    // A stream that refuses message deletes (deny_delete): the delete fails for a reason other than "no message".
    await jsm.streams.add({ name, subjects: [`${subject}.>`], deny_delete: true })
    const stream: TestStream = { name, subject, drop: async () => void (await jsm.streams.delete(name).catch(() => false)) }
    streams.push(stream)
    // Made with removal on from the start, as POST /api/sources allows.
    const created = await createSource({ db, actor: 'test', config: { ...getConfig(), LAZARUS_NATS_URL: [NATS_URL] }, input: createSourceSchema.parse({ kind: 'jetstream', stream: name, removeAfterCapture: true }) })
    expect(created).toMatchObject({ queue: `${name}/*`, removeAfterCapture: true })
    const sourceId = created.id
    const capture = await startCapture('lzt-removal-deny')

    await runFailingConsumer(nc, { stream: name, consumer: 'worker', maxDeliver: 1, messages: failing(stream, ['{"deny":1}', '{"deny":2}']), fails: () => 'nak' })
    await waitFor(async () => (await stored(sourceId)) === 2 && (await lastError(sourceId)) !== null, { what: 'both stored, and the refusal on the source' })
    expect(await lastError(sourceId)).toMatch(new RegExp(`^\\d captured messages? could not be deleted from ${name} and stays? there \\(stored all the same\\): `))
    expect(await inStream(name)).toBe(2)
    expect((await rowsOf(sourceId)).map((r) => r.body.toString())).toEqual(['{"deny":1}', '{"deny":2}'])
    // Not blocked: the advisories were acknowledged, and the next failure is captured too.
    await waitFor(async () => (await jsm.consumers.info(advisoryStream, 'lzt-removal-deny')).num_ack_pending === 0, { what: 'the advisories acknowledged' })
    await runFailingConsumer(nc, { stream: name, consumer: 'worker', maxDeliver: 1, messages: failing(stream, ['{"deny":3}']), fails: () => 'nak' })
    await waitFor(async () => (await stored(sourceId)) === 3, { what: 'the next failure captured' })
    expect(capture.status().removed).toBe(0)

    // Turned off, the refusal is no longer the source's problem.
    expect((await patchSource(sourceId, { removeAfterCapture: false })).status).toBe(200)
    await waitFor(async () => (await lastError(sourceId)) === null, { what: 'the source\'s error cleared' })
  })

  it('stores each failure once and deletes it from the stream across SIGKILLs between the commit and the delete', async () => {
    const { db, nc, jsm, streams, advisoryStream, addSource, stored } = bed
    const stream = await createTestStream(jsm, { prefix: 'LZT_RMCRASH' })
    streams.push(stream)
    const sourceId = await addSource(stream.name, 'crashy')
    await db.sql.query('UPDATE sources SET remove_after_capture = true WHERE id = $1::bigint', [sourceId])
    const consumer = 'lzt-removal-crash'
    const env = {
      DATABASE_URL: db.url, LAZARUS_NATS_URL: NATS_URL, LAZARUS_NATS_ADVISORY_STREAM: advisoryStream, LAZARUS_NATS_CONSUMER: consumer,
      LAZARUS_NATS_ACK_WAIT_S: '1', LAZARUS_DRAIN_RECONCILE_MS: '200',
    }
    // A first worker puts the capture consumer in place (it reads advisories from then on), then is killed.
    const first = spawnWorker(env)
    await waitFor(async () => (await jsm.consumers.info(advisoryStream, consumer).catch(() => null)) !== null || first.exitCode !== null, { timeoutMs: 60_000, what: 'the worker\'s capture consumer' })
    if (first.exitCode !== null) throw new Error(`worker exited on its own:\n${first.output()}`)
    first.kill('SIGKILL')
    await exited(first)

    const TOTAL = 2_000
    const messages = Array.from({ length: TOTAL }, (_, i) => ({ subject: `${stream.subject}.paid`, data: new TextEncoder().encode(`{"n":${i}}`) }))
    await runFailingConsumer(nc, { stream: stream.name, consumer: 'crashy', maxDeliver: 1, messages, fails: () => 'nak' })
    /** Rows stored whose message is still in the stream: the worker committed them and has not deleted them yet. */
    const storedNotDeleted = async () => (await stored(sourceId)) - (TOTAL - (await inStream(stream.name)))

    /**
     * Lets the worker run until it commits a batch, then freezes it (SIGSTOP) and looks: when rows are stored whose
     * messages are still in the stream, the worker stands between the commit and the delete, and the SIGKILL that
     * follows lands there however busy the machine is. Otherwise it runs on to its next commit.
     */
    const freezeBetweenCommitAndDelete = async (worker: ReturnType<typeof spawnWorker>): Promise<boolean> => {
      let seen = await stored(sourceId)
      for (let attempt = 0; attempt < 100 && seen < TOTAL; attempt++) {
        seen = await waitFor(async () => {
          if (worker.exitCode !== null) throw new Error(`worker exited on its own:\n${worker.output()}`)
          const now = await stored(sourceId)
          return now > seen ? now : false
        }, { timeoutMs: 60_000, intervalMs: 2, what: 'the worker\'s next commit' })
        worker.kill('SIGSTOP')
        if ((await storedNotDeleted()) > 0) return true
        worker.kill('SIGCONT')
      }
      return false
    }

    let killedBetween = 0
    for (let workers = 0; workers < 10 && killedBetween < 2 && (await stored(sourceId)) < TOTAL; workers++) {
      const worker = spawnWorker(env)
      const frozen = await freezeBetweenCommitAndDelete(worker).finally(() => worker.kill('SIGKILL'))
      await exited(worker)
      // Looked at again once it is dead (a delete it had sent may have landed since): stored, and still in the stream.
      if (frozen && (await storedNotDeleted()) > 0) killedBetween++
    }
    expect(killedBetween).toBeGreaterThanOrEqual(1)

    const last = spawnWorker(env)
    try {
      await waitFor(async () => {
        const info = await jsm.consumers.info(advisoryStream, consumer)
        return (await stored(sourceId)) >= TOTAL && (await inStream(stream.name)) === 0 && info.num_pending === 0 && info.num_ack_pending === 0
      }, { timeoutMs: 120_000, what: 'every failure captured, deleted from the stream and its advisory acknowledged' })
    } finally {
      last.kill('SIGTERM')
      await exited(last)
    }
    const rows = await rowsOf(sourceId)
    expect(rows).toHaveLength(TOTAL)
    // Each stored once and whole: a delete retried after the crash, or an advisory redelivered after its message was
    // deleted (a record of a gone message, with the same key), changed nothing stored.
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: TOTAL }, (_, i) => i + 1))
    expect(rows.filter((r) => r.body.toString() !== `{"n":${r.seq - 1}}` || r.flags.includes('message-gone') || r.seen !== 1)).toEqual([])
    expect((await db.sql.query<{ drained: number }>('SELECT drained_count::int AS drained FROM sources WHERE id = $1::bigint', [sourceId])).rows[0].drained).toBe(TOTAL)
  })
})
