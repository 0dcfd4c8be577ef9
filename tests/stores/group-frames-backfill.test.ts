import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildRow } from '@/lib/server/ingest/build-row'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { backfillGroupFrames } from '@/lib/server/engines/group-frames/group-frames-store'
import { TYPED_TABLE, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'

/*
 * Groups created before top_frames existed get their frames from their newest message (migration
 * 20261208090000_group_frames_backlog, lib/server/engines/group-frames/): the same frames the drainer stores for a new
 * group, never frames of a signature that is no longer the group's, and a failure midway leaves the backlog as it was.
 * On either engine (tests/helpers/engine-db.ts); `filled` is what the store's UPDATEs report they changed.
 */

/** A Spring AMQP dead letter of `service` failing in `method` (its stack's top in-app frame). */
function springDeadLetter(service: string, method: string, n: number) {
  const stack = [
    'java.util.concurrent.TimeoutException: The operation has timed out after 30 s',
    `\tat com.acme.${service}.${method}(Client.java:${40 + n})`,
    `\tat com.acme.${service}.Worker.handle(Worker.java:12)`,
    '\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.invoke(AbstractMessageListenerContainer.java:1)',
  ].join('\n')
  const typed: TypedTable = {
    'x-exception-fqcn': { t: 'S', v: 'java.util.concurrent.TimeoutException' },
    'x-exception-message': { t: 'S', v: 'The operation has timed out after 30 s' },
    'x-exception-stacktrace': { t: 'S', v: stack },
    'x-original-queue': { t: 'S', v: `${service}.work` },
  }
  return buildRow({
    queue: 'frames.dlq',
    message: {
      content: Buffer.from(JSON.stringify({ n })),
      fields: { exchange: '', routingKey: 'frames.dlq', redelivered: false, deliveryTag: n, consumerTag: 'c' },
      properties: { headers: Object.defineProperty({}, TYPED_TABLE, { value: typed }), contentType: 'application/json' },
    } as never,
    maxBodyBytes: 1 << 20,
  })
}

describe('group frames backfill', () => {
  let db: EngineDb
  const stored = new Map<string, { id: string; frames: string[] }>()

  beforeAll(async () => {
    db = await createEngineDb()
    const sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('frames.dlq') RETURNING id::text`)).rows[0].id
    const rows = [springDeadLetter('orders', 'OrderClient.submit', 1), springDeadLetter('orders', 'OrderClient.submit', 2), springDeadLetter('billing', 'InvoiceClient.send', 3), springDeadLetter('stock', 'StockClient.reserve', 4)]
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'frames.dlq', rows })
    const { rows: groups } = await db.sql.query<{ id: string; signature: string; top_frames: string[] }>('SELECT id::text, signature, top_frames FROM error_groups ORDER BY id')
    for (const g of groups) stored.set(g.signature, { id: g.id, frames: g.top_frames })
    // As a database from before top_frames looks after the migration: empty frames, every group in the backlog.
    await db.sql.query(`UPDATE error_groups SET top_frames = '{}'`)
    await db.sql.query('INSERT INTO group_frames_backlog (group_id) SELECT id FROM error_groups')
  })

  afterAll(async () => {
    await db?.drop()
  })

  const frames = async () => new Map((await db.sql.query<{ id: string; top_frames: string[] }>('SELECT id::text, top_frames FROM error_groups')).rows.map((r) => [r.id, r.top_frames]))
  const backlog = async () => (await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM group_frames_backlog')).rows[0].n

  it('the drainer stored each group its frames, which differ where the titles read the same', () => {
    expect(stored.size).toBe(3)
    const all = [...stored.values()].map((g) => g.frames)
    expect(all).toContainEqual(['com.acme.orders.OrderClient.submit', 'com.acme.orders.Worker.handle'])
    expect(new Set(all.map((f) => f.join())).size).toBe(3)
  })

  it('a failure midway leaves every group listed and unchanged', async () => {
    const billing = [...stored.values()][1]!.id
    await db.sql.query(`CREATE FUNCTION frames_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$`)
    await db.sql.query(`CREATE TRIGGER frames_refuse BEFORE UPDATE ON error_groups FOR EACH ROW WHEN (NEW.id = ${Number(billing)}) EXECUTE FUNCTION frames_refuse()`)
    await expect(backfillGroupFrames({ sql: db.sql })).rejects.toThrow(/disk full/)
    expect(await backlog()).toBe(3)
    expect([...(await frames()).values()].every((f) => f.length === 0)).toBe(true)
    await db.sql.query('DROP TRIGGER frames_refuse ON error_groups')
  })

  it("fills each group with the frames the drainer would store, skips one whose signature is no longer its own, and empties the backlog", async () => {
    const [orders, billing, stock] = [...stored.entries()]
    // The stock group's signature was computed by another rule: its messages now give another signature.
    await db.sql.query(`UPDATE error_groups SET signature = 'v1:an-older-rule' WHERE id = $1::bigint`, [stock![1].id])
    const first = await backfillGroupFrames({ sql: db.sql, groups: 2 })
    expect(first).toEqual({ groups: 2, filled: 2, more: true })
    const second = await backfillGroupFrames({ sql: db.sql, groups: 2 })
    expect(second).toEqual({ groups: 1, filled: 0, more: false })
    const now = await frames()
    expect(now.get(orders![1].id)).toEqual(orders![1].frames)
    expect(now.get(billing![1].id)).toEqual(billing![1].frames)
    expect(now.get(stock![1].id)).toEqual([])
    expect(await backlog()).toBe(0)
    expect(await backfillGroupFrames({ sql: db.sql })).toEqual({ groups: 0, filled: 0, more: false })
    // Listed again with its frames already there: derived, but nothing written over them, and none counted.
    await db.sql.query('INSERT INTO group_frames_backlog (group_id) VALUES ($1::bigint)', [orders![1].id])
    expect(await backfillGroupFrames({ sql: db.sql })).toEqual({ groups: 1, filled: 0, more: false })
  })
})
