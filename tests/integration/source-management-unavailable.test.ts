import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toHttpError } from '@/lib/server/platform/http/handle-route'
import { createSource } from '@/lib/server/sources/create-source'
import { updateSource } from '@/lib/server/sources/update-source'
import { createSourceSchema, updateSourceSchema } from '@/lib/shared/schemas/source'
import { brokerConnection, uniqueName } from '../helpers/broker'
import { createTestDb, type TestDb } from '../helpers/test-db'

// Nothing listens on port 1: the management API is down for this whole file (set before the configuration is read).
process.env.RABBITMQ_MANAGEMENT_URL = 'http://guest:guest@127.0.0.1:1'

/** Without the management API nobody can tell a DLQ from a work queue: refused unless the admin confirms. */
describe('sources while the management API is unavailable', () => {
  let db: TestDb
  const queue = uniqueName('unchecked_dlq')

  beforeAll(async () => {
    db = await createTestDb()
    const connection = await brokerConnection()
    await (await connection.createChannel()).assertQueue(queue, { durable: false })
    await connection.close()
  })

  afterAll(async () => {
    const connection = await brokerConnection()
    await (await connection.createChannel()).deleteQueue(queue).catch(() => {})
    await connection.close()
    await db?.drop()
  })

  it('refuses to create or enable a source with 503 and says how to confirm', async () => {
    const error = await createSource({ db, input: createSourceSchema.parse({ queue }), actor: 'admin@lazarus.test' }).catch((e: unknown) => e)
    const response = toHttpError(error)
    expect(response.status).toBe(503)
    const body = await response.json()
    expect(body.error.message).toMatch(/management API is unavailable.*confirmNotWorkQueue/)
    expect(body.error.details).toEqual({ vhost: '/', queue, confirmWith: 'confirmNotWorkQueue' })

    const disabled = await createSource({ db, input: createSourceSchema.parse({ queue, enabled: false }), actor: 'admin@lazarus.test' })
    await expect(updateSource({ db, id: disabled.id, input: updateSourceSchema.parse({ enabled: true }), actor: 'admin@lazarus.test' })).rejects.toMatchObject({ code: 'unavailable' })
    expect(await updateSource({ db, id: disabled.id, input: updateSourceSchema.parse({ enabled: true, confirmNotWorkQueue: true }), actor: 'admin@lazarus.test' })).toMatchObject({ enabled: true })
  })

  it('accepts the confirmed request without asking the broker', async () => {
    const other = uniqueName('confirmed_dlq')
    expect(await createSource({ db, input: createSourceSchema.parse({ queue: other, confirmNotWorkQueue: true }), actor: 'admin@lazarus.test' })).toMatchObject({ queue: other, enabled: true })
  })
})
