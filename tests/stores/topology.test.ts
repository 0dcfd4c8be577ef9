import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { claimScheduledRun } from '@/lib/server/engines/topology-doctor/topology-doctor-store'
import {
  countOpenFindings, saveFailedRun, saveSuccessfulRun, selectFinding, selectFindings, selectRun, setAcknowledged, takeOpenedFindings, type NewFinding,
} from '@/lib/server/topology/findings-store'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'

/**
 * The topology doctor's store (lib/server/topology/findings-store.ts, engines/topology-doctor/topology-doctor-store.ts)
 * on either engine: a run opens, sees again, reopens and resolves findings (resolved ones counted by execute), a failed
 * run keeps the last good graph, and the alert evaluator takes each opening once. Two processes recording runs of one
 * vhost at once (the advisory lock) is PostgreSQL-only.
 */
let db: EngineDb
beforeAll(async () => {
  db = await createEngineDb()
})
afterAll(async () => db?.drop())

const MINUTE = 60_000
const t0 = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 60 * MINUTE)
const at = (minutes: number) => new Date(t0.getTime() + minutes * MINUTE)
const finding = (key: string, severity: NewFinding['severity'] = 'error'): NewFinding => ({
  key, kind: 'dlx-missing', severity, title: `trap ${key}`, why: 'dead letters are dropped', fix: 'declare the exchange',
  evidence: [{ label: 'x-dead-letter-exchange', value: 'orders.retry (argument)' }], objects: [{ type: 'queue', name: `${key}.work` }], cycle: null, messagesQuery: null,
})
const run = (vhost: string, minute: number, findings: NewFinding[]) =>
  saveSuccessfulRun({ sql: db.sql, vhost, brokerVersion: '4.1.0', graph: { nodes: [], edges: [] }, checks: [], findings, now: at(minute) })
const open = async (vhost: string) => (await selectFindings({ sql: db.sql, vhost })).map((f) => f.detail.title)

describe('topology runs', () => {
  it('open, see again, resolve and reopen findings, counting what each run opened and resolved', async () => {
    expect(await run('shop', 0, [finding('a'), finding('b', 'warning')])).toEqual({ opened: 2, resolved: 0 })
    expect(await run('shop', 1, [finding('a'), finding('b', 'warning')])).toEqual({ opened: 0, resolved: 0 })
    expect(await run('shop', 2, [finding('b', 'warning')])).toEqual({ opened: 0, resolved: 1 })
    expect(await open('shop')).toEqual(['trap b'])
    expect(await run('shop', 3, [finding('a')])).toEqual({ opened: 1, resolved: 1 })
    expect(await run('shop', 4, [])).toEqual({ opened: 0, resolved: 1 })
    expect(await open('shop')).toEqual([])
    const all = await selectFindings({ sql: db.sql, vhost: 'shop', includeResolved: true })
    expect(all.map((f) => [f.detail.title, f.first_seen_at.getTime(), f.resolved_at?.getTime()])).toEqual(
      expect.arrayContaining([['trap a', at(3).getTime(), at(4).getTime()], ['trap b', at(0).getTime(), at(3).getTime()]]),
    )
  })

  it('keep the last good graph through a failed run, and leave a vhost read lately to the next interval', async () => {
    await saveSuccessfulRun({ sql: db.sql, vhost: 'kept', brokerVersion: '4.1.0', graph: { nodes: [], edges: [] }, checks: [], findings: [], now: new Date() })
    await saveFailedRun({ sql: db.sql, vhost: 'kept', error: 'management API unreachable', now: new Date() })
    expect(await selectRun({ sql: db.sql, vhost: 'kept' })).toMatchObject({ broker_version: '4.1.0', graph: { nodes: [], edges: [] }, error: 'management API unreachable' })
    expect(await selectRun({ sql: db.sql, vhost: 'never' })).toBeNull()
    expect(await claimScheduledRun({ sql: db.sql, vhost: 'kept', withinMs: 60_000 })).toBe(false)
    await saveFailedRun({ sql: db.sql, vhost: 'failed-only', error: 'x'.repeat(2000), now: new Date() })
    expect((await selectRun({ sql: db.sql, vhost: 'failed-only' }))?.error).toHaveLength(1000)
    // A failed read is no reason to wait: the next process to look takes it.
    expect(await claimScheduledRun({ sql: db.sql, vhost: 'failed-only', withinMs: 60_000 })).toBe(true)
  })

  it('give each vhost’s scheduled run to one of the processes asking at once, and to the next one an interval later', async () => {
    const claims = await Promise.all(Array.from({ length: 5 }, () => claimScheduledRun({ sql: db.sql, vhost: 'race', withinMs: 60_000 })))
    expect(claims.filter(Boolean)).toHaveLength(1)
    expect(await claimScheduledRun({ sql: db.sql, vhost: 'race', withinMs: 60_000 })).toBe(false)
    // An interval later (a window already past), it is free again.
    expect(await claimScheduledRun({ sql: db.sql, vhost: 'race', withinMs: 0 })).toBe(true)
  })
})

describe('findings', () => {
  it('are acknowledged, counted while open and unacknowledged, and handed to the alert evaluator once per opening', async () => {
    // Openings of earlier tests go first.
    await db.sql.transaction((tx) => takeOpenedFindings({ sql: tx }))
    await run('ops', 0, [finding('x'), finding('y', 'warning'), finding('z', 'warning')])
    const taken = await db.sql.transaction((tx) => takeOpenedFindings({ sql: tx }))
    expect(taken.map((f) => [f.vhost, f.title, f.severity])).toEqual([['ops', 'trap x', 'error'], ['ops', 'trap y', 'warning'], ['ops', 'trap z', 'warning']])
    expect(await db.sql.transaction((tx) => takeOpenedFindings({ sql: tx }))).toEqual([])

    const y = (await selectFindings({ sql: db.sql, vhost: 'ops' })).find((f) => f.detail.title === 'trap y')!
    const acknowledged = await db.sql.transaction(async (tx) => {
      expect((await selectFinding({ sql: tx, id: y.id, forUpdate: true }))?.acknowledged_at).toBeNull()
      return setAcknowledged({ sql: tx, id: y.id, by: 'ops-lead', reason: 'known, fixed Monday', now: at(1) })
    })
    expect(acknowledged).toMatchObject({ acknowledged_by: 'ops-lead', acknowledge_reason: 'known, fixed Monday', acknowledged_at: at(1) })
    const counts = (await countOpenFindings({ sql: db.sql })).filter((c) => c.kind === 'dlx-missing')
    expect(counts.sort((a, b) => a.severity.localeCompare(b.severity))).toEqual([{ severity: 'error', kind: 'dlx-missing', n: 1 }, { severity: 'warning', kind: 'dlx-missing', n: 1 }])

    // Resolved and raised again: a new opening, which the evaluator hears of, and the acknowledgement is gone.
    await run('ops', 2, [finding('x'), finding('z', 'warning')])
    await run('ops', 3, [finding('x'), finding('y', 'warning'), finding('z', 'warning')])
    expect((await db.sql.transaction((tx) => takeOpenedFindings({ sql: tx }))).map((f) => f.title)).toEqual(['trap y'])
    expect((await selectFinding({ sql: db.sql, id: y.id }))?.acknowledged_at).toBeNull()
  })
})
