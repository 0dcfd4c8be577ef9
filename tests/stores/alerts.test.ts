import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  deleteAlertRuleRow, deleteWebhookRow, insertAlertRule, insertWebhookWithin, rowExists, selectAlertEvents, selectAlertRules, selectFiringEvents,
  selectWebhooks, setAlertRuleEnabled, type NewAlertRule,
} from '@/lib/server/alerts/alerts-store'
import {
  alertStates, claimDueEvents, enabledRules, enabledWebhooks, groupRates, insertAlertEvent, markFiring, markRecovered, recordDelivery, sourceRates,
  takeNewGroups, takeNewHalts, takeWebhookPost, tryLockEvaluation, type Measured,
} from '@/lib/server/engines/alert-evaluator/alert-store'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { insertSource, storeRows } from '../helpers/store-seed'
import type { Sql } from '@/lib/server/platform/db/sql'

/**
 * The alert stores on either engine: the API's rules, webhooks and history (lib/server/alerts/alerts-store.ts) and
 * the evaluator's rates, states, cursors and delivery claims (engines/alert-evaluator/alert-store.ts). Whether a
 * second evaluator is kept out by the advisory lock, or skips events another process claimed, needs a second
 * connection: PostgreSQL-only (tests/integration/alerts-delivery.test.ts).
 */
let db: EngineDb
let sourceId: string
let groupId: string
beforeAll(async () => {
  db = await createEngineDb()
  sourceId = await insertSource(db.sql, { queue: 'alerts.dlq' })
  const now = Date.now()
  // Six failures in the last five minutes, one an hour ago.
  await storeRows(db.sql, sourceId, [...Array.from({ length: 6 }, (_, i) => ({ failedAt: new Date(now - i * 30_000), signature: 'v1:alerting' })), { failedAt: new Date(now - 3_600_000), signature: 'v1:alerting' }])
  groupId = (await db.sql.query<{ id: string }>(`SELECT id::text FROM error_groups WHERE signature = 'v1:alerting'`)).rows[0].id
})
afterAll(async () => db?.drop())

const rule = (overrides: Partial<NewAlertRule> = {}): NewAlertRule => ({
  kind: 'source-rate', sourceId: null, groupId: null, thresholdPerMinute: 1, minSeverity: null, windowMinutes: 5, cooldownMinutes: 30, createdBy: 'ops', ...overrides,
})
const measured = (id: string): Measured => ({ key: `source:${id}`, type: 'source', id, label: 'alerts.dlq', rate: 1.2 })

describe('alert rules', () => {
  it('are created, listed with their subject and how many subjects fire, disabled (clearing their state) and deleted', async () => {
    const id = await insertAlertRule({ sql: db.sql, rule: rule({ sourceId, thresholdPerMinute: 0.5 }) })
    await markFiring({ sql: db.sql, ruleId: id, subjectKey: `source:${sourceId}`, now: new Date(), notifiedAt: null })
    expect(await selectAlertRules({ sql: db.sql, id })).toEqual([expect.objectContaining({
      id, kind: 'source-rate', source: { id: sourceId, queue: 'alerts.dlq' }, group: null, thresholdPerMinute: 0.5, windowMinutes: 5, enabled: true, firing: 1,
    })])
    expect((await enabledRules({ sql: db.sql })).map((r) => r.id)).toContain(id)

    expect(await setAlertRuleEnabled({ sql: db.sql, id, enabled: false })).toBe(true)
    expect(await alertStates({ sql: db.sql, ruleId: id })).toEqual([])
    expect((await enabledRules({ sql: db.sql })).map((r) => r.id)).not.toContain(id)
    expect(await setAlertRuleEnabled({ sql: db.sql, id: '999999', enabled: true })).toBe(false)
    expect(await deleteAlertRuleRow({ sql: db.sql, id })).toBe(true)
    expect(await deleteAlertRuleRow({ sql: db.sql, id })).toBe(false)
    expect(await selectAlertRules({ sql: db.sql, id })).toEqual([])
    expect(await rowExists({ sql: db.sql, table: 'error_groups', id: groupId })).toBe(true)
    expect(await rowExists({ sql: db.sql, table: 'sources', id: '999999' })).toBe(false)
  })
})

describe('webhooks', () => {
  it('are listed in the order they were added', async () => {
    for (let i = 0; i < 11; i++) await db.sql.transaction((tx) => insertWebhookWithin({ sql: tx, url: `https://hooks.example/order-${i}`, max: 20 }))
    expect((await selectWebhooks({ sql: db.sql })).map((w) => w.url)).toEqual(Array.from({ length: 11 }, (_, i) => `https://hooks.example/order-${i}`))
    await db.sql.query('DELETE FROM alert_webhooks')
  })

  it('are added up to the maximum, listed, and deleted by id', async () => {
    const added = await db.sql.transaction((tx) => insertWebhookWithin({ sql: tx, url: 'https://hooks.example/a', max: 2 }))
    expect(added).toMatchObject({ url: 'https://hooks.example/a', enabled: true })
    await db.sql.transaction((tx) => insertWebhookWithin({ sql: tx, url: 'https://hooks.example/b', max: 2 }))
    expect(await db.sql.transaction((tx) => insertWebhookWithin({ sql: tx, url: 'https://hooks.example/c', max: 2 }))).toBeNull()
    expect((await selectWebhooks({ sql: db.sql })).map((w) => w.url)).toEqual(['https://hooks.example/a', 'https://hooks.example/b'])
    await db.sql.query(`UPDATE alert_webhooks SET enabled = false WHERE url = 'https://hooks.example/b'`)
    expect(await enabledWebhooks({ sql: db.sql })).toEqual([{ id: added!.id, url: 'https://hooks.example/a', format: 'generic', routing_key: null }])
    // The per-webhook rate cap: `max` POSTs per clock minute, then none until the next minute.
    const minute = new Date('2026-12-07T10:00:00Z')
    const takes = []
    for (let i = 0; i < 4; i++) takes.push(await takeWebhookPost({ sql: db.sql, webhookId: added!.id, now: new Date(minute.getTime() + i * 1_000), max: 3 }))
    expect(takes).toEqual([true, true, true, false])
    expect(await takeWebhookPost({ sql: db.sql, webhookId: added!.id, now: new Date(minute.getTime() + 60_000), max: 3 })).toBe(true)
    expect(await deleteWebhookRow({ sql: db.sql, id: added!.id })).toBe('https://hooks.example/a')
    expect(await deleteWebhookRow({ sql: db.sql, id: added!.id })).toBeNull()
  })
})

describe('the evaluator', () => {
  it('holds the evaluation lock for its transaction, and only then', async () => {
    /** Advisory locks held in this test's database, by any session. */
    const advisoryLocks = async (sql: Sql) =>
      (await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)).rows[0].n
    expect(await advisoryLocks(db.sql)).toBe(0)
    await db.sql.transaction(async (tx) => {
      expect(await tryLockEvaluation({ sql: tx })).toBe(true)
      expect(await advisoryLocks(tx)).toBe(1)
      // Another process's evaluator is turned away meanwhile (PGlite has one session: nothing runs beside it).
      if (db.sql.kind === 'postgres') expect(await db.sql.transaction((other) => tryLockEvaluation({ sql: other }))).toBe(false)
    })
    // Released at commit: the next evaluation takes it again.
    expect(await advisoryLocks(db.sql)).toBe(0)
    expect(await db.sql.transaction((tx) => tryLockEvaluation({ sql: tx }))).toBe(true)
  })

  it('measures arrivals per minute over the rule’s window, per source and per group', async () => {
    const now = new Date(Date.now() + 1_000)
    const id = await insertAlertRule({ sql: db.sql, rule: rule({ sourceId }) })
    const [r] = (await enabledRules({ sql: db.sql })).filter((x) => x.id === id)
    expect(await sourceRates({ sql: db.sql, rule: r, now })).toEqual([{ key: `source:${sourceId}`, type: 'source', id: sourceId, label: 'alerts.dlq', rate: 6 / 5 }])
    const groups = await groupRates({ sql: db.sql, rule: { ...r, kind: 'group-rate', source_id: null, group_id: groupId }, now })
    expect(groups).toEqual([{ key: `group:${groupId}`, type: 'group', id: groupId, label: expect.any(String), rate: 6 / 5 }])
  })

  it('keeps a subject’s state: firing with the cool-down’s start, then recovered', async () => {
    const id = await insertAlertRule({ sql: db.sql, rule: rule() })
    const notified = new Date('2026-11-30T10:00:00Z')
    await markFiring({ sql: db.sql, ruleId: id, subjectKey: 'source:1', now: notified, notifiedAt: notified })
    // Firing again without a notification keeps when it was last notified.
    await markFiring({ sql: db.sql, ruleId: id, subjectKey: 'source:1', now: new Date('2026-11-30T10:05:00Z'), notifiedAt: null })
    expect(await alertStates({ sql: db.sql, ruleId: id })).toEqual([{ subject_key: 'source:1', firing: true, last_notified: notified }])
    await markRecovered({ sql: db.sql, ruleId: id, subjectKey: 'source:1', now: new Date('2026-11-30T10:10:00Z') })
    expect(await alertStates({ sql: db.sql, ruleId: id })).toEqual([{ subject_key: 'source:1', firing: false, last_notified: notified }])
  })

  it('takes the groups and halts created since its last look, once each', async () => {
    const first = await db.sql.transaction((tx) => takeNewGroups({ sql: tx }))
    expect(first.map((g) => g.id)).toContain(groupId)
    expect(await db.sql.transaction((tx) => takeNewGroups({ sql: tx }))).toEqual([])
    await storeRows(db.sql, sourceId, [{ signature: 'v1:brand-new', title: 'Brand new' }])
    expect(await db.sql.transaction((tx) => takeNewGroups({ sql: tx }))).toEqual([expect.objectContaining({ title: 'Brand new', sources: [`source-${sourceId}`], signature: 'v1:brand-new' })])

    expect(await db.sql.transaction((tx) => takeNewHalts({ sql: tx }))).toEqual([])
    const { rows: job } = await db.sql.query<{ id: string }>(`INSERT INTO replay_jobs (selection, target, rate_per_second, plan, created_by) VALUES ('{}', '{}', 1, '{}', 'ops') RETURNING id::text`)
    await db.sql.query(`INSERT INTO replay_halts (job_id, stage, reason, evidence) VALUES ($1::bigint, 0, 'share', '{"published":2,"refailed":1,"sharePercent":50,"newGroups":[]}')`, [job[0].id])
    expect(await db.sql.transaction((tx) => takeNewHalts({ sql: tx }))).toEqual([expect.objectContaining({ job_id: job[0].id, stage: 0, reason: 'share' })])
    expect(await db.sql.transaction((tx) => takeNewHalts({ sql: tx }))).toEqual([])
  })

  it('moves its cursors in id order past ids of more digits, so no group or halt is taken twice or skipped', async () => {
    // Ids from 9 to past 20: as text, '10' sorts before '9', and a cursor set from a text order would go back.
    await storeRows(db.sql, sourceId, Array.from({ length: 14 }, (_, i) => ({ signature: `v1:many-${i}` })))
    const groups = await db.sql.transaction((tx) => takeNewGroups({ sql: tx }))
    expect(groups.map((g) => g.signature).sort()).toEqual(Array.from({ length: 14 }, (_, i) => `v1:many-${i}`).sort())
    expect(groups.map((g) => Number(g.id))).toEqual([...groups.map((g) => Number(g.id))].sort((a, b) => a - b))
    expect(Number(groups[groups.length - 1].id)).toBeGreaterThanOrEqual(10)
    expect(await db.sql.transaction((tx) => takeNewGroups({ sql: tx }))).toEqual([])

    const { rows: job } = await db.sql.query<{ id: string }>(`INSERT INTO replay_jobs (selection, target, rate_per_second, plan, created_by) VALUES ('{}', '{}', 1, '{}', 'ops') RETURNING id::text`)
    await db.sql.query(`INSERT INTO replay_halts (job_id, stage, reason, evidence) SELECT $1::bigint, s, 'share', '{}' FROM generate_series(0, 11) s`, [job[0].id])
    expect((await db.sql.transaction((tx) => takeNewHalts({ sql: tx }))).map((h) => h.stage)).toEqual(Array.from({ length: 12 }, (_, i) => i))
    expect(await db.sql.transaction((tx) => takeNewHalts({ sql: tx }))).toEqual([])
  })

  it('reads the enabled rules in the order they were made', async () => {
    const made: string[] = []
    for (let i = 0; i < 11; i++) made.push(await insertAlertRule({ sql: db.sql, rule: rule() }))
    const ids = (await enabledRules({ sql: db.sql })).map((r) => r.id)
    expect(ids.filter((id) => made.includes(id))).toEqual(made)
  })
})

describe('alert events', () => {
  it('are recorded, paged newest first, shown while their subject fires, and claimed for delivery until done', async () => {
    const ruleId = await insertAlertRule({ sql: db.sql, rule: rule({ sourceId }) })
    const start = Date.now() - 600_000
    const at = (minute: number) => new Date(start + minute * 60_000)
    const firing = await insertAlertEvent({ sql: db.sql, now: at(0), event: { ruleId, kind: 'source-rate', state: 'firing', subject: measured(sourceId), rate: 1.2, threshold: 1, notify: true, text: 'alerts.dlq fires' } })
    const quiet = await insertAlertEvent({ sql: db.sql, now: at(1), event: { ruleId, kind: 'source-rate', state: 'firing', subject: measured('2'), rate: 3, threshold: 1, notify: false, text: 'not notified' } })
    expect(firing).toMatchObject({ rule_id: ruleId, state: 'firing', subject_type: 'source', subject_id: sourceId, notified: true, delivery: [], at: at(0) })
    expect(Number(firing.rate_per_minute)).toBe(1.2)

    await markFiring({ sql: db.sql, ruleId, subjectKey: `source:${sourceId}`, now: at(0), notifiedAt: at(0) })
    expect((await selectFiringEvents({ sql: db.sql })).map((e) => e.id)).toContain(firing.id)
    const page = await selectAlertEvents({ sql: db.sql, before: null, limit: 1 })
    expect(page.map((e) => e.id)).toEqual([quiet.id])
    expect((await selectAlertEvents({ sql: db.sql, before: quiet.id, limit: 1 })).map((e) => e.id)).toEqual([firing.id])

    // Due at once (it notifies); the claim moves its next attempt away, so a second claim now finds nothing.
    const claimed = await claimDueEvents({ sql: db.sql, now: new Date(), claimUntil: new Date(Date.now() + 60_000), limit: 10 })
    expect(claimed.map((e) => [e.id, e.delivery_attempts])).toEqual([[firing.id, 0]])
    expect(await claimDueEvents({ sql: db.sql, now: new Date(), claimUntil: new Date(Date.now() + 60_000), limit: 10 })).toEqual([])
    const delivery = [{ url: 'https://hooks.example/a', ok: false, status: 503, error: 'HTTP 503' }]
    await recordDelivery({ sql: db.sql, eventId: firing.id, delivery, attempts: 1, next: new Date(Date.now() - 1_000) })
    expect(await claimDueEvents({ sql: db.sql, now: new Date(), claimUntil: new Date(Date.now() + 60_000), limit: 10 })).toEqual([
      expect.objectContaining({ id: firing.id, delivery, delivery_attempts: 1 }),
    ])
    await recordDelivery({ sql: db.sql, eventId: firing.id, delivery: [{ ...delivery[0], ok: true, status: 200, error: null }], attempts: 2, next: null })
    expect(await claimDueEvents({ sql: db.sql, now: new Date(Date.now() + 3_600_000), claimUntil: new Date(Date.now() + 7_200_000), limit: 10 })).toEqual([])
  })
})
