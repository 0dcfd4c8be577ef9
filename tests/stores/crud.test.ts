import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { readAllowList, replaceAllowList } from '@/lib/server/settings/settings-store'
import {
  countStoredMessages, deleteSourceAndCounters, findSource, findSourceByQueue, insertMissingSources, insertSource, listSourceRows, updateSourceColumns,
} from '@/lib/server/sources/sources-store'
import { insertLocalUser } from '@/lib/server/users/users-store'
import { countViewsOf, deleteViewOf, hasViewNamed, listViewsOf, upsertView } from '@/lib/server/views/views-store'
import { newSourceRow } from '@/lib/server/sources/new-source-row'
import { createSourceSchema, updateSourceSchema } from '@/lib/shared/schemas/source'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { storeRows } from '../helpers/store-seed'

/**
 * The plain CRUD stores that go through Prisma (sources, settings, saved views: docs/decisions/0012) on either engine,
 * on PGlite through pglite-prisma-adapter: JSON columns set and cleared, upserts, createMany's skipDuplicates, and a
 * delete whose SQL part (the per-source counters) commits with it in one CRUD transaction.
 */
let db: EngineDb
beforeAll(async () => {
  db = await createEngineDb()
})
afterAll(async () => db?.drop())

describe('sources', () => {
  it('are created with their rules, found by id and by queue, and listed by vhost and queue', async () => {
    const input = createSourceSchema.parse({
      queue: 'orders.dlq', entityKey: { kind: 'jsonPointer', pointer: '/orderId' }, critical: true, defaultTarget: { type: 'queue' },
    })
    const source = await insertSource({ prisma: db.prisma, row: newSourceRow(input) })
    expect(source).toMatchObject({ vhost: '/', queue: 'orders.dlq', entityKey: { kind: 'jsonPointer', pointer: '/orderId' }, entityVersion: null, critical: true, enabled: true, defaultTarget: { type: 'queue' }, kind: 'dlq' })
    expect((await findSource({ prisma: db.prisma, id: source.id }))?.queue).toBe('orders.dlq')
    expect((await findSourceByQueue({ prisma: db.prisma, vhost: '/', queue: 'orders.dlq' }))?.id).toBe(source.id)
    expect(await findSourceByQueue({ prisma: db.prisma, vhost: 'other', queue: 'orders.dlq' })).toBeNull()

    await insertMissingSources({ sql: db.sql, queues: ['billing.dlq', 'orders.dlq', 'aardvark.dlq'] })
    const listed = await listSourceRows({ prisma: db.prisma, ids: null })
    expect(listed.map((s) => s.queue)).toEqual(['aardvark.dlq', 'billing.dlq', 'orders.dlq'])
    // A queue from the environment gets the defaults a source created in the UI has.
    expect(listed[0]).toMatchObject({ vhost: '/', entityKey: null, entityVersion: null, orderSensitive: false, critical: false, enabled: true, defaultTarget: { type: 'source' }, kind: 'dlq' })
    // The queue that was a source already kept its settings.
    expect(listed[2]).toMatchObject({ id: source.id, critical: true })
    expect((await listSourceRows({ prisma: db.prisma, ids: [source.id.toString()] })).map((s) => s.queue)).toEqual(['orders.dlq'])
  })

  it('of JetStream are named stream/consumer (or stream/*) with no vhost, and are unique by that name', async () => {
    const one = await insertSource({ prisma: db.prisma, row: newSourceRow(createSourceSchema.parse({ kind: 'jetstream', stream: 'ORDERS', consumer: 'billing' })) })
    expect(one).toMatchObject({ kind: 'jetstream', vhost: '', queue: 'ORDERS/billing', stream: 'ORDERS', consumer: 'billing', orderSensitive: false })
    const all = await insertSource({ prisma: db.prisma, row: newSourceRow(createSourceSchema.parse({ kind: 'jetstream', stream: 'ORDERS' })) })
    expect(all).toMatchObject({ queue: 'ORDERS/*', consumer: null })
    expect((await findSourceByQueue({ prisma: db.prisma, vhost: '', queue: 'ORDERS/billing' }))?.id).toBe(one.id)
    await expect(insertSource({ prisma: db.prisma, row: newSourceRow(createSourceSchema.parse({ kind: 'jetstream', stream: 'ORDERS', consumer: 'billing' })) })).rejects.toThrow()
    // The database itself refuses a RabbitMQ source with a stream, and a JetStream one without.
    await expect(db.sql.query(`INSERT INTO sources (vhost, queue, kind) VALUES ('', 'X/*', 'jetstream')`)).rejects.toThrow(/sources_jetstream_check/)
    await expect(db.sql.query(`INSERT INTO sources (vhost, queue, stream) VALUES ('/', 'x.dlq', 'X')`)).rejects.toThrow(/sources_jetstream_check/)
  })

  it('are updated field by field, a rule set to null cleared', async () => {
    const source = await insertSource({ prisma: db.prisma, row: newSourceRow(createSourceSchema.parse({ queue: 'update.dlq', entityKey: { kind: 'property', name: 'correlationId' } })) })
    const updated = await updateSourceColumns({ prisma: db.prisma, id: source.id, input: updateSourceSchema.parse({ entityKey: null, enabled: false }) })
    expect(updated).toMatchObject({ entityKey: null, enabled: false, critical: false, orderSensitive: false })
    expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(source.updatedAt.getTime())
  })

  it('are deleted with their per-source counters and arrivals, in the transaction of the delete', async () => {
    const source = await insertSource({ prisma: db.prisma, row: newSourceRow(createSourceSchema.parse({ queue: 'doomed.dlq' })) })
    const id = source.id.toString()
    const failedAt = new Date('2026-11-30T10:00:00Z')
    await storeRows(db.sql, id, [{ signature: 'v1:doomed', failedAt }, { signature: 'v1:doomed', failedAt }])
    expect(await countStoredMessages({ prisma: db.prisma, sourceId: source.id })).toBe(2)
    const counters = async () => (await db.sql.query<{ n: number }>(
      `SELECT ((SELECT count(*) FROM group_source_stats WHERE source_id = $1::bigint) + (SELECT count(*) FROM group_source_arrivals WHERE source_id = $1::bigint))::int AS n`, [id],
    )).rows[0].n
    expect(await counters()).toBe(2)
    // Messages keep a source from being deleted; once they are gone, the counters go with it.
    await db.sql.query('DELETE FROM dead_letters WHERE source_id = $1::bigint', [id])
    await crudTransaction(db, ({ prisma, sql }) => deleteSourceAndCounters({ prisma, sql, id: source.id }))
    expect(await findSource({ prisma: db.prisma, id: source.id })).toBeNull()
    expect(await counters()).toBe(0)
  })
})

describe('settings', () => {
  it('are absent until saved, then replaced with an audit entry of before and after', async () => {
    expect(await readAllowList({ prisma: db.prisma, setting: 'webhook-hosts' })).toBeNull()
    const first = await replaceAllowList({ db, setting: 'webhook-hosts', entries: ['hooks.internal'], actor: 'admin', summary: 'Webhook hosts changed', field: 'allowedHosts' })
    expect(first).toMatchObject({ entries: ['hooks.internal'], updatedBy: 'admin' })
    await replaceAllowList({ db, setting: 'webhook-hosts', entries: ['a.internal', 'b.internal'], actor: 'other', summary: 'Webhook hosts changed', field: 'allowedHosts' })
    expect(await readAllowList({ prisma: db.prisma, setting: 'webhook-hosts' })).toMatchObject({ entries: ['a.internal', 'b.internal'], updatedBy: 'other' })
    expect(await readAllowList({ prisma: db.prisma, setting: 'replay-targets' })).toBeNull()
    const { rows } = await db.sql.query<{ actor: string; details: unknown }>(`SELECT actor, details FROM audit_log WHERE subject_id = 'webhook-hosts' ORDER BY id`)
    expect(rows).toEqual([
      { actor: 'admin', details: { before: { allowedHosts: [] }, after: { allowedHosts: ['hooks.internal'] } } },
      { actor: 'other', details: { before: { allowedHosts: ['hooks.internal'] }, after: { allowedHosts: ['a.internal', 'b.internal'] } } },
    ])
  })
})

describe('saved views', () => {
  it('are created or replaced by name per user, listed by name, counted and deleted by their owner only', async () => {
    const ann = await insertLocalUser({ prisma: db.prisma, email: 'ann@lazarus.test', displayName: null })
    const bob = await insertLocalUser({ prisma: db.prisma, email: 'bob@lazarus.test', displayName: null })
    const errors = await upsertView({ prisma: db.prisma, userId: ann, name: 'errors', query: 'status=dead' })
    await upsertView({ prisma: db.prisma, userId: ann, name: 'billing', query: 'source=2' })
    const replaced = await upsertView({ prisma: db.prisma, userId: ann, name: 'errors', query: 'status=dead&q=timeout' })
    expect(replaced).toMatchObject({ id: errors.id, query: 'status=dead&q=timeout' })
    expect((await listViewsOf({ prisma: db.prisma, userId: ann, limit: 10 })).map((v) => v.name)).toEqual(['billing', 'errors'])
    expect(await countViewsOf({ prisma: db.prisma, userId: ann })).toBe(2)
    expect(await hasViewNamed({ prisma: db.prisma, userId: ann, name: 'errors' })).toBe(true)
    expect(await hasViewNamed({ prisma: db.prisma, userId: bob, name: 'errors' })).toBe(false)
    expect(await deleteViewOf({ prisma: db.prisma, userId: bob, id: errors.id })).toBe(false)
    expect(await deleteViewOf({ prisma: db.prisma, userId: ann, id: errors.id })).toBe(true)
    expect(await countViewsOf({ prisma: db.prisma, userId: ann })).toBe(1)
  })
})
