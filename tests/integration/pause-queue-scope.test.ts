import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'
import { createPause } from '@/lib/server/pauses/create-pause'
import { registerHoldSource } from '@/lib/server/engines/release/release-store'
import { createPauseSchema } from '@/lib/shared/schemas/pause'
import { isolatePauseTopology } from '../helpers/pause-topology'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { closeComposition, composition } from '@/lib/server/platform/process/composition'

const topology = isolatePauseTopology()

let n = 0
function deadLetter(originQueue: string | null): IngestRow {
  const body = Buffer.from(JSON.stringify({ orderId: `order-${++n}` }))
  return {
    fingerprint: createHash('sha256').update(body).digest(),
    redelivered: false, body, bodyEncoding: 'json', bodyPreview: body.toString('utf8'),
    propertiesJson: '{}', headersJson: '{}', deliveryExchange: '', deliveryRoutingKey: 'scope.dlq',
    deathReason: 'rejected', attempts: 1, originExchange: 'orders', originRoutingKeys: ['order.created'], originQueue,
    firstDeathAt: new Date('2026-11-01T10:00:00Z'), lastDeathAt: new Date('2026-11-01T10:00:00Z'), failedAt: new Date(Date.parse('2026-11-01T10:00:00Z') + n),
    errorType: 'StockException', errorMessage: 'out of stock', errorStack: null, failureKind: 'exhausted',
    service: 'orders', serviceVersion: '1.0.0', framework: 'lazarus', entityKey: `order-${n}`,
    signature: 'v1:pausescope00001', title: 'StockException: out of stock', messagePattern: 'out of stock',
    flags: [], lineageOriginId: null, replayCount: 0, status: 'dead',
  }
}

/**
 * A pause stops a consumer, so it may only name a queue the source's dead letters failed in (their origin queues);
 * naming any other queue of the broker is for admins (createPause's allowAnyQueue).
 */
describe('which queues a pause may name', () => {
  let db: TestDb
  let sourceId: string
  let bareId: string
  let holdId: string
  const pause = (body: Record<string, unknown>, allowAnyQueue?: boolean) =>
    createPause({ db, control: composition().control, input: createPauseSchema.parse({ reason: 'scope test', ...body }), actor: 'op', ...(allowAnyQueue === undefined ? {} : { allowAnyQueue }) })
  const refusal = async (body: Record<string, unknown>) => {
    const error = await pause(body).then(() => null, (e: unknown) => e)
    expect(error).toBeInstanceOf(AppError)
    expect((error as AppError).status).toBe(422)
    return error as AppError
  }

  beforeAll(async () => {
    topology.assertConfigured()
    db = await createTestDb()
    const source = async (queue: string) =>
      (await db.sql.query<{ id: string }>(`INSERT INTO sources (vhost, queue, enabled) VALUES ('/', $1, false) RETURNING id::text`, [queue])).rows[0].id
    sourceId = await source('scope.dlq')
    bareId = await source('scope.bare.dlq')
    holdId = await registerHoldSource({ sql: db.sql, vhost: '/', queue: topology.hold })
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'scope.dlq', rows: [deadLetter('scope.orders.work'), deadLetter('scope.orders.work'), deadLetter('scope.orders.retry'), deadLetter(null)] })
    await storeBatch({ sql: db.sql, sourceId: bareId, sourceLabel: 'scope.bare.dlq', rows: [deadLetter(null)] })
  })

  afterAll(async () => {
    await closeComposition()
    await topology.cleanup()
    await db?.drop()
  })

  it('pauses where most dead letters failed when no queue is named', async () => {
    expect(await pause({ sourceId, entityKey: 'order-a' })).toMatchObject({ queue: 'scope.orders.work', status: 'active' })
  })

  it('pauses any origin queue of the source by name, also a less common one', async () => {
    expect(await pause({ sourceId, queue: 'scope.orders.retry', entityKey: 'order-b' })).toMatchObject({ queue: 'scope.orders.retry' })
    expect(await pause({ sourceId, queue: 'scope.orders.work', entityKey: null }, false)).toMatchObject({ queue: 'scope.orders.work', entityKey: null })
  })

  it('refuses another queue with 422 and lists the allowed ones', async () => {
    const error = await refusal({ sourceId, queue: 'payments.work', entityKey: null })
    expect(error.message).toBe(
      '"payments.work" is not a queue the dead letters of "scope.dlq" failed in; pause one of "scope.orders.retry", "scope.orders.work" (only an admin can name another queue)',
    )
    expect(error.details).toEqual({ queue: 'payments.work', allowedQueues: ['scope.orders.retry', 'scope.orders.work'] })
    const { rows } = await db.sql.query(`SELECT 1 FROM pauses WHERE queue = 'payments.work'`)
    expect(rows).toHaveLength(0)
  })

  it('refuses every named queue of a source whose dead letters name none', async () => {
    const error = await refusal({ sourceId: bareId, queue: 'scope.bare.work', entityKey: 'k-1' })
    expect(error.message).toMatch(/there is no queue to pause; only an admin can name one/)
    expect(error.details).toEqual({ queue: 'scope.bare.work', allowedQueues: [] })
  })

  it('lets an admin name any queue (allowAnyQueue)', async () => {
    expect(await pause({ sourceId, queue: 'payments.work', entityKey: null }, true)).toMatchObject({ queue: 'payments.work', entityKey: null })
    expect(await pause({ sourceId: bareId, queue: 'scope.bare.work', entityKey: 'k-1' }, true)).toMatchObject({ queue: 'scope.bare.work' })
  })

  it("still refuses the hold source, admin or not", async () => {
    await expect(pause({ sourceId: holdId, queue: 'scope.orders.work', entityKey: 'k' }, true)).rejects.toMatchObject({ code: 'unprocessable' })
  })
})
