import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readExportPages } from '@/lib/server/export/export-rows'
import { exportMessages } from '@/lib/server/export/stream-export'
import { buildGroupTicket, buildMessageTicket, buildSelectionTicket } from '@/lib/server/export/ticket'
import { getGroup } from '@/lib/server/groups/get-group'
import { groupBreakdown } from '@/lib/server/groups/group-breakdown'
import { listGroups } from '@/lib/server/groups/list-groups'
import { updateGroup } from '@/lib/server/groups/update-group'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'
import { countMessages } from '@/lib/server/messages/count-messages'
import { getMessage } from '@/lib/server/messages/get-message'
import { getMessageBody } from '@/lib/server/messages/get-message-body'
import { listMessages } from '@/lib/server/messages/list-messages'
import { resolveMessages } from '@/lib/server/messages/resolve-messages'
import { loadRedactor } from '@/lib/server/redaction/redaction-rules'
import { getSummary } from '@/lib/server/summary/get-summary'
import { exportQuerySchema } from '@/lib/shared/schemas/export'
import { listMessagesQuerySchema } from '@/lib/shared/schemas/message'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
/** Orders' share of the flood group: past the exact-count cap, so counts come from the counters. */
const FLOOD_ORDERS = 10_010
const baseUrl = 'http://lazarus.test'

/**
 * A caller restricted to some sources (a role binding limited to `billing.*`) sees only their messages: a group that
 * spans sources shows the allowed sources' counts, rates, arrivals, facets and sources; a group or message only found
 * elsewhere is not found; lists, counts, exports and tickets leave the other sources out. Unrestricted callers see it all.
 */
describe('reads restricted to some sources', () => {
  let db: TestDb
  const now = new Date()
  const source = { orders: '', billing: '' }
  const group = { shared: '', orders: '', billing: '', flood: '' }
  const billing = () => ({ sourceIds: [source.billing] })
  const at = (ms: number) => new Date(now.getTime() - ms)
  const ids = async (where: string, params: unknown[] = []) =>
    (await db.sql.query<{ id: string }>(`SELECT id::text FROM dead_letters WHERE ${where} ORDER BY failed_at DESC, id DESC`, params)).rows.map((r) => r.id)

  beforeAll(async () => {
    db = await createTestDb()
    for (const key of ['orders', 'billing'] as const) {
      source[key] = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ($1) RETURNING id::text`, [`${key}.dlq`])).rows[0].id
    }
    const orders = (failedAt: Date, o: Partial<IngestRow> = {}) =>
      ingestRow({ failedAt, signature: 'v1:scope-shared', title: 'Shared failure', service: 'orders-api', serviceVersion: '4.1', failureKind: 'transient', errorMessage: 'stock timeout', ...o })
    const bill = (failedAt: Date, o: Partial<IngestRow> = {}) =>
      ingestRow({ failedAt, signature: 'v1:scope-shared', title: 'Shared failure', service: 'billing', serviceVersion: '7.3', failureKind: 'invalid', errorMessage: 'card declined', ...o })
    await storeBatch({
      sql: db.sql,
      sourceId: source.orders, sourceLabel: 'orders.dlq',
      rows: [
        orders(at(2 * MINUTE)), orders(at(2 * MINUTE)), orders(at(30 * MINUTE)), orders(at(30 * MINUTE)), orders(at(3 * HOUR)), orders(at(3 * HOUR)),
        ...[1, 2, 3].map(() => orders(at(10 * MINUTE), { signature: 'v1:scope-orders', title: 'Orders only', failureKind: 'exhausted' })),
      ],
    })
    await storeBatch({
      sql: db.sql,
      sourceId: source.billing, sourceLabel: 'billing.dlq',
      rows: [
        bill(at(MINUTE)), bill(at(20 * MINUTE)), bill(at(5 * HOUR)), bill(at(5 * HOUR)),
        ...[1, 2].map(() => bill(at(2 * DAY), { signature: 'v1:scope-billing', title: 'Billing only', serviceVersion: '7.4' })),
        ...[1, 2, 3, 4, 5].map((i) => bill(at(4 * DAY + i * 1000), { signature: 'v1:scope-flood', title: 'Flood', service: 'batch', failureKind: 'overflow' })),
      ],
    })
    for (let start = 0; start < FLOOD_ORDERS; start += 1000) {
      const rows = Array.from({ length: Math.min(1000, FLOOD_ORDERS - start) }, (_, k) =>
        orders(at(3 * DAY + (start + k) * 1000), { signature: 'v1:scope-flood', title: 'Flood', service: 'batch', failureKind: 'overflow' }))
      await storeBatch({ sql: db.sql, sourceId: source.orders, sourceLabel: 'orders.dlq', rows })
    }
    const { rows } = await db.sql.query<{ id: string; signature: string }>('SELECT id::text, signature FROM error_groups')
    for (const r of rows) group[r.signature.replace('v1:scope-', '') as keyof typeof group] = r.id
    // One billing and two orders messages of the shared group resolved: the counters follow per source.
    const resolve = async (where: string, take: number) =>
      resolveMessages({ db, input: { selection: { ids: (await ids(where, [group.shared])).slice(0, take) }, reason: 'handled' }, actor: 'ann' })
    await resolve(`group_id = $1 AND source_id = ${source.billing} AND failed_at < now() - interval '4 hours'`, 1)
    await resolve(`group_id = $1 AND source_id = ${source.orders} AND failed_at < now() - interval '2 hours'`, 2)
    await db.sql.query('ANALYZE')
  })
  afterAll(async () => db?.drop())

  describe('GET /api/groups', () => {
    it('lists only groups with messages in the allowed sources, with their counts, rates, sparkline, facets and sources', async () => {
      const { groups } = await listGroups({ db, query: { sort: 'count', limit: 50 }, now, ...billing() })
      expect(groups.map((g) => g.id)).toEqual([group.flood, group.shared, group.billing])
      const shared = groups.find((g) => g.id === group.shared)!
      expect(shared).toMatchObject({
        count: 4, firstSeen: at(5 * HOUR).toISOString(), lastSeen: at(MINUTE).toISOString(),
        ratePerMinute: { last5: 0.2, last60: 0.03 }, sources: ['billing.dlq'], services: ['billing'], serviceVersions: ['7.3'],
        failureKinds: ['invalid'], replayedCount: 0, resolvedCount: 1,
      })
      expect(shared.sparkline.reduce((a, b) => a + b, 0)).toBe(4)
      expect(groups.find((g) => g.id === group.flood)).toMatchObject({ count: 5, sources: ['billing.dlq'] })
    })

    it('leaves unrestricted callers the whole group', async () => {
      const { groups } = await listGroups({ db, query: { sort: 'count', limit: 50 }, now })
      expect(groups.map((g) => g.id)).toEqual([group.flood, group.shared, group.orders, group.billing])
      expect(groups.find((g) => g.id === group.shared)).toMatchObject({
        count: 10, ratePerMinute: { last5: 0.6, last60: 0.1 }, sources: ['billing.dlq', 'orders.dlq'], services: ['billing', 'orders-api'],
        failureKinds: ['invalid', 'transient'], resolvedCount: 3,
      })
      expect(groups.find((g) => g.id === group.shared)!.sparkline.reduce((a, b) => a + b, 0)).toBe(10)
    })

    it.each([
      ['a source outside the scope', { source: 'orders.dlq' }, []],
      ['a failure kind only the other source has', { failureKind: 'transient' }, []],
      ['a service', { service: 'billing' }, ['shared', 'billing']],
      ['active since', { from: at(90 * MINUTE) }, ['shared']],
    ] as const)('filters on the allowed sources\' figures: %s', async (_name, filter, want) => {
      const { groups } = await listGroups({ db, query: { sort: 'count', limit: 50, ...filter }, now, ...billing() })
      expect(groups.map((g) => Object.entries(group).find(([, id]) => id === g.id)?.[0])).toEqual(want)
    })

    it('sorts by the allowed sources\' rate', async () => {
      const { groups } = await listGroups({ db, query: { sort: 'rate', limit: 50 }, now, sourceIds: [source.orders] })
      expect(groups.map((g) => g.id).slice(0, 2)).toEqual([group.shared, group.orders])
    })

    it('an empty scope sees nothing', async () => {
      expect((await listGroups({ db, query: { sort: 'count', limit: 50 }, now, sourceIds: [] })).groups).toEqual([])
      await expect(getGroup({ db, id: group.shared, range: '24h', now, sourceIds: [] })).rejects.toMatchObject({ code: 'not_found' })
    })
  })

  describe('GET /api/groups/{id}', () => {
    it('shows the group as the allowed sources see it: arrivals, breakdowns and counts', async () => {
      const detail = await getGroup({ db, id: group.shared, range: '24h', now, ...billing() })
      expect(detail.group).toMatchObject({ id: group.shared, count: 4, sources: ['billing.dlq'] })
      expect(detail.arrivals.reduce((a, b) => a + b.count, 0)).toBe(4)
      expect(detail.breakdown).toEqual({
        sources: [{ id: source.billing, value: 'billing.dlq', count: 4 }],
        services: [{ value: 'billing', count: 4 }],
        serviceVersions: [{ value: '7.3', count: 4 }],
        failureKinds: [{ value: 'invalid', count: 4 }],
      })
      expect(detail).toMatchObject({ breakdownRows: 4, breakdownSampled: false })
      const whole = await getGroup({ db, id: group.shared, range: '24h', now })
      expect(whole.arrivals.reduce((a, b) => a + b.count, 0)).toBe(10)
      expect(whole.breakdown.sources.map((s) => s.count)).toEqual([6, 4])
    })

    it('is not found when no allowed source holds a message of it', async () => {
      await expect(getGroup({ db, id: group.orders, range: '24h', now, ...billing() })).rejects.toMatchObject({ code: 'not_found' })
      await expect(updateGroup({ db, id: group.orders, input: { note: 'x' }, actor: 'ann', ...billing() })).rejects.toMatchObject({ code: 'not_found' })
      expect(await updateGroup({ db, id: group.shared, input: { note: 'seen by billing' }, actor: 'ann', ...billing() })).toMatchObject({ count: 4, note: 'seen by billing' })
    })

    it('counts the breakdown over the group\'s most recent messages, the allowed ones among them, and says when that is a sample', async () => {
      // The flood's newest messages are all orders': a window of 100 holds none of billing's five.
      expect(await groupBreakdown({ sql: db.sql, group: { id: group.flood, count: 5 }, cap: 100, ...billing() })).toMatchObject({ breakdownRows: 0, breakdownSampled: true })
      const whole = await groupBreakdown({ sql: db.sql, group: { id: group.flood, count: 5 }, cap: FLOOD_ORDERS + 5, ...billing() })
      expect(whole).toMatchObject({ breakdownRows: 5, breakdownSampled: false, breakdown: { sources: [{ id: source.billing, count: 5 }] } })
    })
  })

  it('GET /api/summary counts and lists only the allowed sources', async () => {
    const scoped = await getSummary({ db, engines: null, now, depthTimeoutMs: 300, ...billing() })
    expect(scoped).toMatchObject({ stored: 11, arrivalsLastHour: 2, groups: 3 })
    expect(scoped.sources.map((s) => s.id)).toEqual([source.billing])
    const whole = await getSummary({ db, engines: null, now, depthTimeoutMs: 300 })
    expect(whole).toMatchObject({ stored: 11 + 9 + FLOOD_ORDERS, arrivalsLastHour: 9, groups: 4 })
    expect(whole.sources).toHaveLength(2)
  })

  describe('GET /api/messages', () => {
    async function allPages(query: Record<string, string>, sourceIds: string[]): Promise<string[]> {
      const seen: string[] = []
      let cursor: string | null = null
      do {
        const page = await listMessages({ db, query: listMessagesQuerySchema.parse({ ...query, limit: '3', ...(cursor ? { cursor } : {}) }), sourceIds })
        seen.push(...page.messages.map((m) => m.id))
        cursor = page.nextCursor
      } while (cursor)
      return seen
    }

    it.each([
      ['no filter', {}, 'TRUE', 11],
      ['a group spanning both sources', { group: 'shared' }, 'group_id = $1', 4],
      ['a status', { status: 'resolved' }, `id IN (SELECT dead_letter_id FROM dead_letter_states WHERE status = 'resolved')`, 1],
      ['a search', { q: 'declined' }, 'TRUE', 11],
      ['a search only the other source matches', { q: 'stock timeout' }, 'FALSE', 0],
      ['a source outside the scope', { source: 'orders' }, 'FALSE', 0],
    ] as const)('lists only the allowed sources\' messages, every page: %s', async (_name, filter, where, count) => {
      const query = Object.fromEntries(Object.entries(filter).map(([k, v]) => [k, k === 'group' ? group[v as keyof typeof group] : k === 'source' ? source[v as keyof typeof source] : v]))
      const want = await ids(`source_id = ${source.billing} AND ${where}`, 'group' in filter ? [group.shared] : [])
      expect(want).toHaveLength(count)
      expect(await allPages(query, [source.billing])).toEqual(want)
    })

    it('counts only the allowed sources\' messages, from their counters past the exact cap', async () => {
      expect(await countMessages({ db, filter: {}, ...billing() })).toEqual({ count: 11, estimated: false, method: 'exact' })
      expect(await countMessages({ db, filter: { group: group.shared }, ...billing() })).toEqual({ count: 4, estimated: false, method: 'exact' })
      const orders = { sourceIds: [source.orders] }
      expect(await countMessages({ db, filter: { group: group.flood }, ...orders })).toEqual({ count: FLOOD_ORDERS, estimated: true, method: 'counter' })
      expect(await countMessages({ db, filter: {}, ...orders })).toEqual({ count: FLOOD_ORDERS + 9, estimated: true, method: 'counter' })
      expect(await countMessages({ db, filter: { group: group.flood } })).toEqual({ count: FLOOD_ORDERS + 5, estimated: true, method: 'counter' })
    })

    it('a message of another source is not found, its body neither; related messages come from the allowed sources', async () => {
      const [ordersMessage] = await ids(`source_id = ${source.orders} AND group_id = ${group.shared}`)
      const [billingMessage, ...otherBilling] = await ids(`source_id = ${source.billing} AND group_id = ${group.shared}`)
      await expect(getMessage({ db, id: ordersMessage, ...billing() })).rejects.toMatchObject({ code: 'not_found' })
      await expect(getMessageBody({ db, id: ordersMessage, ...billing() })).rejects.toMatchObject({ code: 'not_found' })
      const detail = await getMessage({ db, id: billingMessage, ...billing() })
      expect(detail.related.sameGroup.map((m) => m.id)).toEqual(otherBilling)
      expect((await getMessageBody({ db, id: billingMessage, ...billing() })).bytes.length).toBeGreaterThan(0)
      expect((await getMessage({ db, id: billingMessage })).related.sameGroup.some((m) => m.source.id === source.orders)).toBe(true)
    })
  })

  describe('export and tickets', () => {
    const text = async (query: Record<string, string>, sourceIds?: string[]) =>
      new Response((await exportMessages(exportQuerySchema.parse(query), { db, baseUrl, now, ...(sourceIds ? { sourceIds } : {}) })).body).text()

    it('JSON Lines and CSV hold only the allowed sources\' messages, named ids included', async () => {
      const jsonl = (await text({ format: 'jsonl', group: group.shared }, [source.billing])).trim().split('\n').map((line) => JSON.parse(line))
      expect(jsonl.map((m) => m.id)).toEqual(await ids(`source_id = ${source.billing} AND group_id = ${group.shared}`))
      expect(jsonl.every((m) => m.source.queue === 'billing.dlq')).toBe(true)
      const csv = (await text({ format: 'csv' }, [source.billing])).trim().split('\r\n')
      expect(csv).toHaveLength(1 + 11)
      const [ordersMessage] = await ids(`source_id = ${source.orders}`)
      const [billingMessage] = await ids(`source_id = ${source.billing}`)
      const named = (await text({ format: 'jsonl', ids: `${ordersMessage},${billingMessage}` }, [source.billing])).trim().split('\n')
      expect(named.map((line) => JSON.parse(line).id)).toEqual([billingMessage])
      const pages: string[] = []
      for await (const page of readExportPages(db.sql, { filter: {} }, { pageRows: 4, ...billing() })) pages.push(...page.map((r) => r.id))
      expect(pages).toEqual(await ids(`source_id = ${source.billing}`))
    })

    it('a group export of a group only found elsewhere is not found', async () => {
      await expect(exportMessages(exportQuerySchema.parse({ format: 'csv', group: group.orders }), { db, baseUrl, ...billing() })).rejects.toMatchObject({ code: 'not_found' })
    })

    it('Markdown tickets of a group, a selection and a message show only the allowed sources', async () => {
      const groupTicket = await text({ format: 'md', group: group.shared }, [source.billing])
      expect(groupTicket).toContain('`billing.dlq`')
      expect(groupTicket).not.toContain('orders')
      expect(groupTicket).toMatch(/\*\*Messages:\*\* 4 \(3 dead or held · 1 resolved\)/)
      const redactor = await loadRedactor({ sql: db.sql })
      const selection = await buildSelectionTicket({ filter: { group: group.shared } }, { db, redactor, baseUrl, now, ...billing() })
      expect(selection).toMatch(/Dead letters: 4 messages/)
      expect(selection).not.toContain('orders')
      expect(await buildSelectionTicket({ filter: { group: group.shared } }, { db, redactor, baseUrl, now })).toMatch(/Dead letters: 10 messages/)
      const [ordersMessage] = await ids(`source_id = ${source.orders}`)
      await expect(buildMessageTicket(ordersMessage, { db, redactor, baseUrl, ...billing() })).rejects.toMatchObject({ code: 'not_found' })
      await expect(buildGroupTicket(group.orders, { db, redactor, baseUrl, ...billing() })).rejects.toMatchObject({ code: 'not_found' })
      expect(await buildMessageTicket(ordersMessage, { db, redactor, baseUrl })).toContain('`orders.dlq`')
    })
  })
})
