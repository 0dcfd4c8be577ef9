import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as groupsRoute from '@/app/api/groups/route'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { claimItems, recordOutcomes } from '@/lib/server/engines/replay-executor/job-store'
import { getGroup } from '@/lib/server/groups/get-group'
import { listGroups } from '@/lib/server/groups/list-groups'
import type { IngestRow } from '@/lib/server/ingest/types'
import { resolveMessages } from '@/lib/server/messages/resolve-messages'
import { HELD_SIGNATURE, HELD_TITLE } from '@/lib/server/pauses/held-row'
import { listGroupsQuerySchema, type GroupDto } from '@/lib/shared/schemas/group'
import { callRoute } from '../helpers/call-route'
import { ingestRow } from '../helpers/ingest-row'
import { freezeJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'

/**
 * What the groups list shows of a group's messages (docs/ARCHITECTURE.md#groups-and-counters): dead, replayed,
 * resolved and held per group from the maintained counters, after replay, resolve, hold and release; the views that
 * keep groups with something left to do (`attention`) or nothing (`handled`); per source for a restricted caller.
 */
describe('groups: status counts and views', () => {
  let db: TestDb
  const source = { a: '', b: '' }

  const store = (key: 'a' | 'b', rows: IngestRow[]) => storeBatch({ sql: db.sql, sourceId: source[key], sourceLabel: `status.${key}.dlq`, rows })
  const rowsOf = (signature: string, n: number, overrides: Partial<IngestRow> = {}) =>
    Array.from({ length: n }, () => ingestRow({ signature, title: 'TimeoutException: The operation has timed out after <duration>', ...overrides }))
  const groupOf = async (signature: string) => (await db.sql.query<{ id: string }>('SELECT id::text FROM error_groups WHERE signature = $1', [signature])).rows[0].id
  const idsOf = async (groupId: string) =>
    (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE group_id = $1::bigint ORDER BY id', [groupId])).rows.map((r) => r.id)
  const list = async (query: Record<string, string> = {}, sourceIds?: string[]) =>
    (await listGroups({ db, query: listGroupsQuerySchema.parse({ sort: 'count', ...query }), sourceIds })).groups
  const byId = (groups: GroupDto[]) => new Map(groups.map((g) => [g.id, g]))
  const counts = (g: GroupDto | undefined) => g && { count: g.count, dead: g.deadCount, replayed: g.replayedCount, resolved: g.resolvedCount, held: g.heldCount }

  /** What create-replay and the executor write for a job, without a broker: items replaying, then their outcomes. */
  async function replay(kind: 'replay' | 'release', ids: string[], confirm: (i: number) => boolean): Promise<void> {
    const jobId = await freezeJob({ sql: db.sql, kind, ids, actor: 'status-test' })
    const items = await claimItems({ sql: db.sql, jobId, afterSeq: 0, span: 1000, limit: 1000, maxBytes: 1 << 24 })
    await recordOutcomes({
      sql: db.sql, jobId, actor: 'status-test', rate: null,
      outcomes: items.map((item, i) => ({
        seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: confirm(i) ? ('confirmed' as const) : ('failed' as const),
        error: confirm(i) ? null : 'nacked', publishedAt: Date.now(),
      })),
    })
  }

  beforeAll(async () => {
    db = await createTestDb()
    for (const key of ['a', 'b'] as const) {
      source[key] = (await db.sql.query<{ id: string }>('INSERT INTO sources (queue) VALUES ($1) RETURNING id::text', [`status.${key}.dlq`])).rows[0].id
    }
    // Three groups with the same title that differ in their top frame (defect 10), and held messages.
    await store('a', [
      ...rowsOf('v1:status-orders', 5, { topFrames: ['Acme.Orders.OrderClient.Submit'] }),
      ...rowsOf('v1:status-billing', 3, { topFrames: ['Acme.Billing.Invoices.Send', 'Acme.Billing.Worker.Run'] }),
      ...rowsOf('v1:status-stock', 10, { topFrames: ['Acme.Stock.Reserve'] }),
    ])
    await store('b', rowsOf('v1:status-orders', 2))
    await store('a', rowsOf(HELD_SIGNATURE, 2, { status: 'held', title: HELD_TITLE }))
  })
  afterAll(async () => db?.drop())

  it('a new group has every message dead, and keeps the frames that tell same-titled groups apart', async () => {
    const groups = byId(await list())
    const orders = await groupOf('v1:status-orders')
    expect(counts(groups.get(orders))).toEqual({ count: 7, dead: 7, replayed: 0, resolved: 0, held: 0 })
    expect(groups.get(orders)?.topFrames).toEqual(['Acme.Orders.OrderClient.Submit'])
    expect(groups.get(await groupOf('v1:status-billing'))?.topFrames).toEqual(['Acme.Billing.Invoices.Send', 'Acme.Billing.Worker.Run'])
    // The last hour per minute: 60 buckets, this minute's arrivals in the last one.
    expect(groups.get(orders)?.sparklineHour).toHaveLength(60)
    expect(groups.get(orders)?.sparklineHour.reduce((a, b) => a + b, 0)).toBe(7)
  })

  it('replay, resolve, hold and release move the counts; the attention view drops a fully handled group', async () => {
    const orders = await groupOf('v1:status-orders')
    const billing = await groupOf('v1:status-billing')
    const stock = await groupOf('v1:status-stock')
    const held = await groupOf(HELD_SIGNATURE)
    // Two of orders replayed, the broker refusing one of them: it stays dead.
    await replay('replay', (await idsOf(orders)).slice(0, 2), (i) => i === 0)
    // Billing resolved as a whole, and one of stock.
    await resolveMessages({ db, input: { selection: { groupId: billing }, reason: 'fixed' }, actor: 'ann' })
    await resolveMessages({ db, input: { selection: { ids: (await idsOf(stock)).slice(0, 1) }, reason: 'dup' }, actor: 'ann' })

    const all = byId(await list({ includeHeld: 'true' }))
    expect(counts(all.get(orders))).toEqual({ count: 7, dead: 6, replayed: 1, resolved: 0, held: 0 })
    expect(counts(all.get(billing))).toEqual({ count: 3, dead: 0, replayed: 0, resolved: 3, held: 0 })
    expect(counts(all.get(stock))).toEqual({ count: 10, dead: 9, replayed: 0, resolved: 1, held: 0 })
    expect(counts(all.get(held))).toEqual({ count: 2, dead: 0, replayed: 0, resolved: 0, held: 2 })

    // The group page says the same.
    expect(counts((await getGroup({ db, id: orders, range: '24h' })).group)).toEqual(counts(all.get(orders)))

    const attention = await list({ view: 'attention', sort: 'dead', includeHeld: 'true' })
    expect(attention.map((g) => g.id)).toEqual([stock, orders, held])
    expect((await list({ view: 'handled' })).map((g) => g.id)).toEqual([billing])
    // Without a view the API lists every group, as it did before views existed.
    expect((await list()).map((g) => g.id).sort()).toEqual([orders, billing, stock].sort())

    // Releasing the held messages handles that group too.
    await replay('release', await idsOf(held), () => true)
    const released = byId(await list({ includeHeld: 'true' })).get(held)
    expect(counts(released)).toEqual({ count: 2, dead: 0, replayed: 2, resolved: 0, held: 0 })
    expect((await list({ view: 'attention', includeHeld: 'true' })).map((g) => g.id)).not.toContain(held)
    expect((await list({ view: 'handled', includeHeld: 'true' })).map((g) => g.id).sort()).toEqual([billing, held].sort())
  })

  it('a caller restricted to some sources sees those sources\' counts', async () => {
    const orders = await groupOf('v1:status-orders')
    const onlyB = await list({ view: 'attention' }, [source.b])
    expect(onlyB.map((g) => g.id)).toEqual([orders])
    expect(counts(onlyB[0])).toEqual({ count: 2, dead: 2, replayed: 0, resolved: 0, held: 0 })
    const onlyA = byId(await list({ view: 'attention', sort: 'dead' }, [source.a]))
    expect(counts(onlyA.get(orders))).toEqual({ count: 5, dead: 4, replayed: 1, resolved: 0, held: 0 })
    expect((await list({ view: 'handled' }, [source.b])).map((g) => g.id)).toEqual([])
  })

  it('GET /api/groups takes view and sort=dead, and refuses an unknown view', async () => {
    const ok = await callRoute(groupsRoute, 'GET', new Request('http://lazarus.test/api/groups?view=attention&sort=dead'))
    expect(ok.status).toBe(200)
    const body = (await ok.json()) as { groups: GroupDto[] }
    expect(body.groups.map((g) => g.deadCount)).toEqual([9, 6])
    expect(body.groups[0]).toMatchObject({ heldCount: 0, topFrames: ['Acme.Stock.Reserve'] })
    const bad = await callRoute(groupsRoute, 'GET', new Request('http://lazarus.test/api/groups?view=everything'))
    expect(bad.status).toBe(400)
  })
})
