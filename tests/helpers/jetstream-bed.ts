import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { startJetStreamCapture, type JetStreamCapture } from '@/lib/server/engines/jetstream-capture/jetstream-capture'
import { logger } from '@/lib/server/platform/log'
import { waitFor } from './broker'
import { NATS_URL, natsConnection, uniqueNatsName, type TestStream } from './nats'
import { createTestDb, type TestDb } from './test-db'

/**
 * What a JetStream capture test works with: its database, a NATS connection, an advisory stream name of its own
 * (LZT_…, removed with the streams the test made) and the captures it started, in this process.
 */
export type JetStreamBed = {
  db: TestDb
  nc: NatsConnection
  jsm: JetStreamManager
  advisoryStream: string
  /** Streams the test made, dropped by close(). */
  streams: TestStream[]
  /** A JetStream source row, enabled, as POST /api/sources makes it (without asking the server). */
  addSource(stream: string, consumer: string | null): Promise<string>
  /** A capture in this process with the consumer name given, started once its consumer is on each of `advisoryStreams`. */
  startCapture(consumer: string, advisoryStreams?: string[]): Promise<JetStreamCapture>
  /** Captures with different consumer names on one database each store every failure: one at a time, so tests stop theirs. */
  stopCaptures(): Promise<void>
  /** How many messages a source stored. */
  stored(sourceId: string): Promise<number>
  close(): Promise<void>
}

export async function openJetStreamBed(): Promise<JetStreamBed> {
  const db = await createTestDb()
  const nc = await natsConnection()
  const jsm = await jetstreamManager(nc)
  const advisoryStream = uniqueNatsName('LZT_ADVISORIES')
  const streams: TestStream[] = []
  const captures: JetStreamCapture[] = []
  return {
    db, nc, jsm, advisoryStream, streams,
    async addSource(stream, consumer) {
      const { rows } = await db.sql.query<{ id: string }>(
        `INSERT INTO sources (vhost, queue, kind, stream, consumer) VALUES ('', $1, 'jetstream', $2, $3) RETURNING id::text`,
        [`${stream}/${consumer ?? '*'}`, stream, consumer],
      )
      return rows[0].id
    },
    async startCapture(consumer, advisoryStreams = [advisoryStream]) {
      const capture = startJetStreamCapture({
        db, log: logger('jetstream-test'), maxBodyBytes: 1024 * 1024, reconcileMs: 100,
        settings: { LAZARUS_NATS_URL: [NATS_URL], LAZARUS_NATS_ADVISORY_STREAM: advisoryStream, LAZARUS_NATS_CONSUMER: consumer, LAZARUS_NATS_ACK_WAIT_S: 1 },
      })
      captures.push(capture)
      for (const stream of advisoryStreams) {
        await waitFor(async () => (await jsm.consumers.info(stream, consumer).catch(() => null)) !== null, { what: `capture consumer ${consumer} on ${stream}` })
      }
      return capture
    },
    async stopCaptures() {
      for (const capture of captures.splice(0)) await capture.stop()
    },
    async stored(sourceId) {
      return (await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters WHERE source_id = $1::bigint', [sourceId])).rows[0].n
    },
    async close() {
      for (const capture of captures.splice(0)) await capture.stop()
      for (const stream of streams) await stream.drop()
      await jsm.streams.delete(advisoryStream).catch(() => false)
      await nc.close()
      await db.drop()
    },
  }
}
