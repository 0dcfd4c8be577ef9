import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH, createTestUser, tokenActor, type TestUser } from '../helpers/auth'
import * as replays from '@/app/api/replays/route'
import * as replay from '@/app/api/replays/[id]/route'
import * as replayItems from '@/app/api/replays/[id]/items/route'
import * as replayCancel from '@/app/api/replays/[id]/cancel/route'
import * as resolve from '@/app/api/messages/resolve/route'
import * as audit from '@/app/api/audit/route'
import * as message from '@/app/api/messages/[id]/route'
import * as groups from '@/app/api/groups/route'
import { brokerConnection, uniqueName } from '../helpers/broker'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { bulkRows, storeBulk } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'

const base = 'http://lazarus.test'
const get = (path: string) => new Request(base + path, { headers: ADMIN_AUTH })
const users: Record<string, TestUser> = {}
const post = (path: string, body: unknown, user = 'carol') =>
  new Request(base + path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: users[user].authorization } })
const ctx = <P>(params: P) => ({ params: Promise.resolve(params) })

type Case = { name: string; call: () => Promise<Response>; status: number; check?: (body: any) => void }

describe('replay, resolve and audit API', () => {
  let db: TestDb
  let ids: string[]
  let groupId: string
  let otherGroupId: string
  let jobId: string
  const queue = uniqueName('api_work')
  let connection: ChannelModel

  beforeAll(async () => {
    db = await createTestDb()
    for (const name of ['carol', 'dave']) users[name] = await createTestUser(db, name, [{ role: 'operator' }])
    // The failed queue exists on the broker (a plan to a missing one is refused: replay-unroutable-target.test.ts);
    // nothing consumes it, and no executor runs here.
    connection = await brokerConnection()
    await (await connection.createChannel()).assertQueue(queue, { durable: false })
    await storeBulk(db.sql, uniqueName('api_dlq'), bulkRows(6, { originExchange: uniqueName('api_x'), originKey: 'k', originQueue: queue, entity: (n) => `order-${n % 2}` }))
    const other = bulkRows(3, { originExchange: 'x', originKey: 'k', originQueue: queue, start: 100 }).map((r) => ({ ...r, signature: 'v1:other0000000001', title: 'Other' }))
    await storeBulk(db.sql, uniqueName('api_dlq2'), other)
    const { rows } = await db.sql.query<{ id: string; group_id: string }>('SELECT id::text, group_id::text FROM dead_letters ORDER BY id')
    ids = rows.map((r) => r.id)
    groupId = rows[0].group_id
    otherGroupId = rows[8].group_id
  })
  afterAll(async () => {
    await (await connection?.createChannel())?.deleteQueue(queue).catch(() => {})
    await connection?.close().catch(() => {})
    await db?.drop()
  })

  const created: Case[] = [
    {
      name: 'dry run answers the plan',
      call: () => replays.POST(post('/api/replays', { selection: { ids: ids.slice(0, 2) }, target: { type: 'queue' }, dryRun: true }), ctx({})),
      status: 200,
      check: (b) => {
        expect(b.plan).toMatchObject({ matched: 2, replayable: 2, canRun: true, target: { type: 'queue' }, ratePerSecond: 500, estimatedSeconds: 1 })
        expect(b.plan.targets).toEqual([expect.objectContaining({ exchange: '', routingKey: queue, queues: 1, messages: 2 })])
        expect(b.plan.entities).toMatchObject({ count: 2, orderSensitive: 0 })
        expect(b.id).toBeUndefined()
      },
    },
    {
      name: 'creating a job answers 201 with its id, status and plan',
      call: () => replays.POST(post('/api/replays', { selection: { ids: ids.slice(0, 2) }, target: { type: 'queue' }, ratePerSecond: 50 }), ctx({})),
      status: 201,
      check: (b) => {
        expect(b).toMatchObject({ status: 'pending', plan: { replayable: 2, ratePerSecond: 50 } })
        jobId = b.id
      },
    },
    { name: 'replay without a selection', call: () => replays.POST(post('/api/replays', { dryRun: true }), ctx({})), status: 400 },
    { name: 'replay with an empty id list', call: () => replays.POST(post('/api/replays', { selection: { ids: [] } }), ctx({})), status: 400 },
    { name: 'replay with a non-numeric id', call: () => replays.POST(post('/api/replays', { selection: { ids: ['abc'] } }), ctx({})), status: 400 },
    { name: 'replay with a rate of 0', call: () => replays.POST(post('/api/replays', { selection: { ids: [ids[2]] }, ratePerSecond: 0 }), ctx({})), status: 400 },
    { name: 'replay with a custom target lacking an exchange', call: () => replays.POST(post('/api/replays', { selection: { ids: [ids[2]] }, target: { type: 'custom', routingKey: 'k' } }), ctx({})), status: 400 },
    { name: 'replay with an unknown field', call: () => replays.POST(post('/api/replays', { selection: { ids: [ids[2]] }, colour: 'red' }), ctx({})), status: 400 },
    { name: 'replay with malformed JSON', call: () => replays.POST(post('/api/replays', '{"selection":'), ctx({})), status: 400 },
    { name: 'replay with a bad filter', call: () => replays.POST(post('/api/replays', { selection: { filter: { status: 'zombie' } } }), ctx({})), status: 400 },
    {
      name: 'replay of messages already in a job is refused with the plan',
      call: () => replays.POST(post('/api/replays', { selection: { ids: ids.slice(0, 2) } }), ctx({})),
      status: 422,
      check: (b) => {
        expect(b.error.message).toMatch(/None of the selected messages can be replayed/)
        expect(b.error.details.plan.excluded).toEqual([{ reason: 'not-dead', count: 2, sampleIds: ids.slice(0, 2) }])
      },
    },
    { name: 'replay of an unknown group', call: () => replays.POST(post('/api/replays', { selection: { groupId: '987654' } }), ctx({})), status: 422, check: (b) => expect(b.error.message).toMatch(/matches no messages/) },
  ]

  const reads: Case[] = [
    { name: 'replay list', call: () => replays.GET(get('/api/replays'), ctx({})), status: 200, check: (b) => expect(b.replays).toEqual([expect.objectContaining({ id: jobId, kind: 'replay', status: 'pending', total: 2, ratePerSecond: 50, createdBy: tokenActor('carol'), cancelRequested: false, currentRate: null, cancelled: 0 })]) },
    { name: 'replay list by status', call: () => replays.GET(get('/api/replays?status=completed'), ctx({})), status: 200, check: (b) => expect(b).toEqual({ replays: [], nextCursor: null }) },
    { name: 'replay list with a bad status', call: () => replays.GET(get('/api/replays?status=bogus'), ctx({})), status: 400 },
    { name: 'replay list with a bad limit', call: () => replays.GET(get('/api/replays?limit=0'), ctx({})), status: 400 },
    { name: 'replay list with a forged cursor', call: () => replays.GET(get('/api/replays?cursor=bm9wZQ'), ctx({})), status: 400 },
    {
      name: 'one replay with its plan and pauses',
      call: () => replay.GET(get(`/api/replays/${jobId}`), ctx({ id: jobId })),
      status: 200,
      check: (b) => expect(b).toMatchObject({ id: jobId, status: 'pending', plan: { replayable: 2 }, pauses: [], target: { type: 'queue' }, selection: { ids: ids.slice(0, 2) } }),
    },
    { name: 'unknown replay', call: () => replay.GET(get('/api/replays/424242'), ctx({ id: '424242' })), status: 404 },
    { name: 'non-numeric replay id', call: () => replay.GET(get('/api/replays/abc'), ctx({ id: 'abc' })), status: 404 },
    {
      name: 'replay items in publish order',
      call: () => replayItems.GET(get(`/api/replays/${jobId}/items`), ctx({ id: jobId })),
      status: 200,
      check: (b) => {
        expect(b.items.map((i: any) => [i.id, i.messageId, i.status, i.kind, i.routingKey])).toEqual([['1', ids[0], 'pending', 'replay', queue], ['2', ids[1], 'pending', 'replay', queue]])
        expect(b.items[0]).toMatchObject({ exchange: '', errorType: 'com.acme.StockException', entityKey: 'order-0', publishedAt: null })
        expect(b.items[0].replayId).toMatch(/^[0-9a-f-]{36}$/)
        expect(b.nextCursor).toBeNull()
      },
    },
    {
      name: 'replay items paged',
      call: () => replayItems.GET(get(`/api/replays/${jobId}/items?limit=1`), ctx({ id: jobId })),
      status: 200,
      check: (b) => expect(b).toMatchObject({ items: [{ id: '1' }], nextCursor: '1' }),
    },
    { name: 'replay items after a cursor', call: () => replayItems.GET(get(`/api/replays/${jobId}/items?cursor=1`), ctx({ id: jobId })), status: 200, check: (b) => expect(b.items.map((i: any) => i.id)).toEqual(['2']) },
    { name: 'replay items by status', call: () => replayItems.GET(get(`/api/replays/${jobId}/items?status=confirmed`), ctx({ id: jobId })), status: 200, check: (b) => expect(b.items).toEqual([]) },
    { name: 'replay items with a bad status', call: () => replayItems.GET(get(`/api/replays/${jobId}/items?status=lost`), ctx({ id: jobId })), status: 400 },
    { name: 'replay items with a bad cursor', call: () => replayItems.GET(get(`/api/replays/${jobId}/items?cursor=x`), ctx({ id: jobId })), status: 400 },
    { name: 'items of an unknown replay', call: () => replayItems.GET(get('/api/replays/424242/items'), ctx({ id: '424242' })), status: 404 },
    {
      name: 'message detail shows it is replaying',
      call: () => message.GET(get(`/api/messages/${ids[0]}`), ctx({ id: ids[0] })),
      status: 200,
      check: (b) => {
        expect(b.status).toBe('replaying')
        expect(b.replays).toEqual([expect.objectContaining({ jobId, kind: 'replay', status: 'pending', createdBy: tokenActor('carol') })])
        expect(b.replayedFrom).toBeNull()
      },
    },
  ]

  const cancels: Case[] = [
    {
      name: 'cancel of a job no executor started ends it at once',
      call: () => replayCancel.POST(post(`/api/replays/${jobId}/cancel`, {}), ctx({ id: jobId })),
      status: 200,
      check: (b) => expect(b).toMatchObject({ id: jobId, status: 'cancelled', cancelRequested: true, cancelled: 2, finishedAt: expect.any(String) }),
    },
    { name: 'second cancel', call: () => replayCancel.POST(post(`/api/replays/${jobId}/cancel`, {}), ctx({ id: jobId })), status: 409, check: (b) => expect(b.error.message).toMatch(/cancelled/) },
    { name: 'cancel of an unknown replay', call: () => replayCancel.POST(post('/api/replays/424242/cancel', {}), ctx({ id: '424242' })), status: 404 },
    { name: 'message is dead again after the cancel', call: () => message.GET(get(`/api/messages/${ids[0]}`), ctx({ id: ids[0] })), status: 200, check: (b) => expect(b).toMatchObject({ status: 'dead', statusReason: 'replay cancelled', statusChangedBy: tokenActor('carol'), replays: [{ status: 'cancelled' }] }) },
  ]

  const resolves: Case[] = [
    { name: 'resolve without a reason', call: () => resolve.POST(post('/api/messages/resolve', { selection: { ids: [ids[2]] } }), ctx({})), status: 400 },
    { name: 'resolve with a blank reason', call: () => resolve.POST(post('/api/messages/resolve', { selection: { ids: [ids[2]] }, reason: '   ' }), ctx({})), status: 400 },
    { name: 'resolve with a bad selection', call: () => resolve.POST(post('/api/messages/resolve', { selection: { groupId: 'x' }, reason: 'r' }), ctx({})), status: 400 },
    {
      name: 'resolve a selection',
      call: () => resolve.POST(post('/api/messages/resolve', { selection: { ids: [ids[2], ids[3]] }, reason: 'duplicate orders, refunded by hand' }), ctx({})),
      status: 200,
      check: (b) => expect(b).toEqual({ resolved: 2, skipped: 0, skippedReasons: [] }),
    },
    {
      name: 'resolve a whole group skips what is already resolved',
      call: () => resolve.POST(post('/api/messages/resolve', { selection: { groupId }, reason: 'fixed in 1.0.1' }, 'dave'), ctx({})),
      status: 200,
      check: (b) => expect(b).toEqual({ resolved: 4, skipped: 2, skippedReasons: [{ reason: 'already resolved', count: 2 }] }),
    },
    {
      name: 'resolved messages cannot be replayed',
      call: () => replays.POST(post('/api/replays', { selection: { groupId }, dryRun: true }), ctx({})),
      status: 200,
      check: (b) => expect(b.plan).toMatchObject({ matched: 6, replayable: 0, canRun: false, excluded: [{ reason: 'not-dead', count: 6 }] }),
    },
    {
      name: 'message detail shows the resolution',
      call: () => message.GET(get(`/api/messages/${ids[2]}`), ctx({ id: ids[2] })),
      status: 200,
      check: (b) => expect(b).toMatchObject({ status: 'resolved', statusReason: 'duplicate orders, refunded by hand', statusChangedBy: tokenActor('carol') }),
    },
    {
      name: 'group counters and status follow',
      call: () => groups.GET(get('/api/groups?sort=count'), ctx({})),
      status: 200,
      check: (b) => {
        const resolved = b.groups.find((g: any) => g.id === groupId)
        expect(resolved).toMatchObject({ status: 'resolved', resolvedCount: 6, replayedCount: 0 })
        expect(b.groups.find((g: any) => g.id === otherGroupId)).toMatchObject({ status: 'open', resolvedCount: 0 })
      },
    },
  ]

  const audits: Case[] = [
    {
      name: 'audit log, newest first',
      call: () => audit.GET(get('/api/audit'), ctx({})),
      status: 200,
      check: (b) => {
        // Creating the test users is audited too; this test is about replays and resolves.
        b.entries = b.entries.filter((e: any) => !/^(user|token)\.|^message\.raw-viewed$/.test(e.action))
        expect(b.entries.map((e: any) => [e.action, e.actor, e.outcome])).toEqual([
          ['messages.resolved', tokenActor('dave'), 'resolved'],
          ['messages.resolved', tokenActor('carol'), 'resolved'],
          ['replay.cancelled', tokenActor('carol'), 'cancelled'],
          ['replay.created', tokenActor('carol'), 'pending'],
        ])
        expect(b.entries[0]).toMatchObject({ subject: { type: 'group', id: groupId }, details: { reason: 'fixed in 1.0.1', resolved: 4, skipped: 2 } })
        expect(b.entries[3]).toMatchObject({ subject: { type: 'replay', id: jobId }, summary: expect.stringContaining('Replay') })
        expect(b.nextCursor).toBeNull()
      },
    },
    { name: 'audit log by action', call: () => audit.GET(get('/api/audit?action=replay.created'), ctx({})), status: 200, check: (b) => expect(b.entries).toHaveLength(1) },
    { name: 'audit log by subject', call: () => audit.GET(get(`/api/audit?subjectType=replay&subjectId=${jobId}`), ctx({})), status: 200, check: (b) => expect(b.entries).toHaveLength(2) },
    {
      name: 'audit log paged',
      call: async () => {
        // Pages of 3 walk the whole log, newest first, with no entry twice.
        const all = await (await audit.GET(get('/api/audit?limit=200'), ctx({}))).json()
        const seen: string[] = []
        let cursor: string | null = null
        do {
          const page: any = await (await audit.GET(get(`/api/audit?limit=3${cursor ? `&cursor=${cursor}` : ''}`), ctx({}))).json()
          expect(page.entries.length).toBeLessThanOrEqual(3)
          seen.push(...page.entries.map((e: any) => e.id))
          cursor = page.nextCursor
        } while (cursor)
        expect(seen).toEqual(all.entries.map((e: any) => e.id))
        expect(seen.length).toBeGreaterThan(3)
        return audit.GET(get('/api/audit?limit=3'), ctx({}))
      },
      status: 200,
      check: (b) => expect(b.entries).toHaveLength(3),
    },
    { name: 'audit log with an unknown action', call: () => audit.GET(get('/api/audit?action=deleted'), ctx({})), status: 400 },
    { name: 'audit log with a bad limit', call: () => audit.GET(get('/api/audit?limit=1000'), ctx({})), status: 400 },
    { name: 'audit log with a forged cursor', call: () => audit.GET(get('/api/audit?cursor=Zm9v'), ctx({})), status: 400 },
    { name: 'audit log with an unknown parameter', call: () => audit.GET(get('/api/audit?who=me'), ctx({})), status: 400 },
  ]

  for (const c of [...created, ...reads, ...cancels, ...resolves, ...audits]) {
    it(c.name, async () => {
      const response = await c.call()
      const body = await response.json()
      expect(response.status, JSON.stringify(body)).toBe(c.status)
      if (c.status >= 400) expect(typeof body.error.message).toBe('string')
      c.check?.(body)
    })
  }

  it('pages the replay list', async () => {
    for (let i = 4; i < 6; i++) {
      expect((await replays.POST(post('/api/replays', { selection: { ids: [ids[i]] }, target: { type: 'queue' } }), ctx({}))).status).toBe(422)
    }
    const more = await replays.POST(post('/api/replays', { selection: { ids: [ids[6]] }, target: { type: 'queue' } }), ctx({}))
    expect(more.status).toBe(201)
    const first = await (await replays.GET(get('/api/replays?limit=1'), ctx({}))).json()
    expect(first.replays).toHaveLength(1)
    expect(typeof first.nextCursor).toBe('string')
    const second = await (await replays.GET(get(`/api/replays?limit=1&cursor=${first.nextCursor}`), ctx({}))).json()
    expect(second.replays.map((r: any) => r.id)).toEqual([jobId])
    expect(second.nextCursor).toBeNull()
  })

  it('never gives one message to two jobs created at the same time', async () => {
    const dead = (await db.sql.query<{ id: string }>(`SELECT id::text FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE status = 'dead' ORDER BY id`)).rows.map((r) => r.id)
    expect(dead.length).toBeGreaterThan(0)
    const body = { selection: { ids: dead }, target: { type: 'queue' } }
    const responses = await Promise.all([1, 2, 3].map(() => replays.POST(post('/api/replays', body), ctx({}))))
    const statuses = responses.map((r) => r.status).sort()
    expect(statuses.filter((s) => s === 201)).toHaveLength(1)
    expect(statuses.filter((s) => s !== 201).every((s) => s === 409 || s === 422)).toBe(true)
    const { rows } = await db.sql.query<{ n: number; distinct_messages: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT dead_letter_id)::int AS distinct_messages FROM replay_items i JOIN replay_jobs j ON j.id = i.job_id WHERE j.status = 'pending'`,
    )
    expect(rows[0].n).toBe(rows[0].distinct_messages)
  })

  it('gives each message to a resolve or to one job, never both, when they race', async () => {
    const dlq = uniqueName('race_dlq')
    const rows = bulkRows(40, { originExchange: 'x', originKey: 'k', originQueue: queue, start: 500 }).map((r) => ({ ...r, signature: 'v1:race000000000001', title: 'Race' }))
    await storeBulk(db.sql, dlq, rows)
    const raced = (await db.sql.query<{ id: string }>('SELECT d.id::text FROM dead_letters d JOIN sources s ON s.id = d.source_id WHERE s.queue = $1 ORDER BY d.id', [dlq])).rows.map((r) => r.id)
    expect(raced).toHaveLength(40)
    const selection = { ids: raced }
    const responses = await Promise.all([
      replays.POST(post('/api/replays', { selection, target: { type: 'queue' } }), ctx({})),
      resolve.POST(post('/api/messages/resolve', { selection, reason: 'race' }), ctx({})),
      replays.POST(post('/api/replays', { selection, target: { type: 'queue' } }), ctx({})),
    ])
    expect(responses.filter((r) => ![200, 201, 409, 422].includes(r.status)).map((r) => r.status)).toEqual([])
    const { rows: owners } = await db.sql.query<{ id: string; status: string; jobs: number }>(
      `SELECT d.id::text, ms.status, (SELECT count(*)::int FROM replay_items i WHERE i.dead_letter_id = d.id) AS jobs
       FROM dead_letters d JOIN message_statuses ms ON ms.dead_letter_id = d.id WHERE d.id = ANY($1::bigint[]) ORDER BY d.id`,
      [raced],
    )
    for (const owner of owners) {
      if (owner.status === 'resolved') expect(owner.jobs).toBe(0)
      else expect([owner.status, owner.jobs]).toEqual(['replaying', 1])
    }
  })
})
