import { randomBytes } from 'node:crypto'
// First: the routes load amqplib through this, which patches its header codec before anything loads amqplib; the
// demo's plain amqplib then decodes as it always does.
import '@/lib/server/platform/broker/amqplib'
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import amqp, { type ChannelModel } from 'amqplib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as groupsRoute from '@/app/api/groups/route'
import { formatSummary, runSeed, type SeedResult } from '@/lib/demo/seed'
import { deleteAppTopology } from '@/lib/demo/topology'
import { deleteDemoTraps } from '@/lib/demo/traps'
import { startJetStreamCapture, type JetStreamCapture } from '@/lib/server/engines/jetstream-capture/jetstream-capture'
import { logger } from '@/lib/server/platform/log'
import { waitFor } from '../helpers/broker'
import { callRoute } from '../helpers/call-route'
import { NATS_URL, natsConnection, uniqueNatsName } from '../helpers/nats'
import { createTestDb, type TestDb } from '../helpers/test-db'

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'

/**
 * `npm run demo:seed`'s JetStream part (lib/demo/jetstream.ts) against the real nats-server: the failures it makes
 * before any Lazarus runs wait in the advisory stream, and a capture started afterwards turns them into groups beside
 * the RabbitMQ demo's. In the group that runs alone: the seed makes a stream that keeps every stream's advisories, as
 * Lazarus would on its first start (docs/jetstream.md#capture).
 */
describe('demo seed: the JetStream part', () => {
  // LZT_ names (the stream is the prefix, upper-cased, + _ORDERS), so a killed run's streams are removed by the next.
  const prefix = `lzt_demo_${randomBytes(3).toString('hex')}`
  const stream = `${prefix.toUpperCase()}_ORDERS`
  const settings = { LAZARUS_NATS_URL: [NATS_URL], LAZARUS_NATS_ADVISORY_STREAM: uniqueNatsName('LZT_DEMO_ADVISORIES'), LAZARUS_NATS_CONSUMER: 'lzt-demo-capture', LAZARUS_NATS_ACK_WAIT_S: 30 }
  let connection: ChannelModel
  let nc: NatsConnection
  let jsm: JetStreamManager
  let db: TestDb
  let result: SeedResult
  let capture: JetStreamCapture | undefined

  beforeAll(async () => {
    connection = await amqp.connect(AMQP_URL)
    nc = await natsConnection()
    jsm = await jetstreamManager(nc)
    db = await createTestDb()
    result = await runSeed({ amqpUrl: AMQP_URL, prefix, count: 96, fast: true, nats: settings })
  })

  afterAll(async () => {
    await capture?.stop()
    // Both runs declare the same topology (one prefix).
    for (const topology of result?.topologies ?? []) await deleteAppTopology(connection, topology)
    if (result) await deleteDemoTraps(connection, result.traps)
    await jsm?.streams.delete(stream).catch(() => false)
    await jsm?.streams.delete(settings.LAZARUS_NATS_ADVISORY_STREAM).catch(() => false)
    await nc?.close()
    await connection?.close()
    await db?.drop()
  })

  it('fails a few kinds of messages after max_deliver 3 and terminates one, beside the RabbitMQ dead letters, and says how to capture them', () => {
    expect(result.dlqs.reduce((sum, d) => sum + d.added, 0)).toBe(96)
    expect(result.jetstream).toMatchObject({
      skipped: null, stream, subjects: `${prefix}.orders.>`, consumer: 'fulfilment', maxDeliver: 3, published: 24, failed: 16,
      advisoryStream: settings.LAZARUS_NATS_ADVISORY_STREAM, discardedLeftovers: 0,
      breakdown: {
        succeeded: 8, 'Go inventory-service (Nats-Error-Type)': 8, 'Java fulfilment-service (Nats-Error-Type)': 2,
        'NATS micro address-validator (Nats-Service-Error)': 2, 'no error metadata': 2, 'terminated: unparsable (+TERM)': 2,
      },
    })
    const summary = formatSummary(result)
    expect(summary).toContain(`Seeded 16 JetStream failures in ${stream} (${prefix}.orders.>), consumer fulfilment with max_deliver 3:`)
    expect(summary).toContain(`LAZARUS_NATS_URL=${NATS_URL}`)
    expect(summary).toContain(`then add the JetStream source ${stream} (Sources → Add source → JetStream): its failures wait for Lazarus in ${settings.LAZARUS_NATS_ADVISORY_STREAM}.`)
  })

  it('keeps the failures for a Lazarus started afterwards, whose capture shows them as JetStream groups', async () => {
    const { rows: [source] } = await db.sql.query<{ id: string }>(
      `INSERT INTO sources (vhost, queue, kind, stream) VALUES ('', $1, 'jetstream', $2) RETURNING id::text`, [`${stream}/*`, stream],
    )
    capture = startJetStreamCapture({ db, settings, log: logger('demo-seed-test'), maxBodyBytes: 1024 * 1024, reconcileMs: 100 })
    const stored = async () => (await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters WHERE source_id = $1::bigint', [source.id])).rows[0].n
    await waitFor(async () => (await stored()) >= 16, { timeoutMs: 60_000, what: "the demo's 16 JetStream failures captured" })
    expect(await stored()).toBe(16)

    const response = await callRoute(groupsRoute, 'GET', new Request(`http://lazarus.test/api/groups?source=${encodeURIComponent(`${stream}/*`)}`))
    expect(response.status).toBe(200)
    const groups = (await response.json()).groups as { title: string; count: number; services: string[] }[]
    // One group per kind of failure, each with its service, from the headers the demo's services set.
    expect(groups.map((g) => [g.title.replace(/:.*/, ''), g.count, g.services]).sort()).toEqual([
      ['CarrierTimeoutException', 2, ['fulfilment-service']],
      ['OutOfStockError', 8, ['inventory-service']],
      ['SyntaxError', 2, ['order-intake']],
      ['no error metadata', 2, []],
      ['postcode <str> is not valid for country DE', 2, ['address-validator']],
    ])
    expect(groups.find((g) => g.title.startsWith('no error metadata'))?.title).toBe(`no error metadata: max deliveries reached in ${stream}/*`)

    const { rows } = await db.sql.query<{ death_reason: string; n: number }>(
      'SELECT death_reason, count(*)::int AS n FROM dead_letters WHERE source_id = $1::bigint GROUP BY 1 ORDER BY 1', [source.id],
    )
    expect(rows).toEqual([{ death_reason: 'max-deliveries', n: 14 }, { death_reason: 'terminated', n: 2 }])
  })

  it('says in one line that NATS is unreachable, and seeds RabbitMQ alone', async () => {
    const run = await runSeed({ amqpUrl: AMQP_URL, prefix, count: 12, fast: true, nats: { ...settings, LAZARUS_NATS_URL: ['nats://lazarus:s3cret@127.0.0.1:1'] } })
    expect(run.dlqs.reduce((sum, d) => sum + d.added, 0)).toBe(12)
    expect(run.jetstream).toMatchObject({ skipped: expect.stringMatching(/^NATS is not reachable at 127\.0\.0\.1:1 \(/), published: 0 })
    const lines = formatSummary(run).split('\n').filter((line) => /NATS|JetStream/.test(line))
    expect(lines).toEqual([expect.stringMatching(/^JetStream: NATS is not reachable at 127\.0\.0\.1:1 \(.*\); seeded RabbitMQ only\.$/)])
    expect(formatSummary(run)).not.toContain('s3cret')
  })
})
