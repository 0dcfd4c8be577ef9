import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as findingsRoute from '@/app/api/topology/findings/route'
import * as acknowledgeRoute from '@/app/api/topology/findings/[id]/acknowledge/route'
import * as metricsRoute from '@/app/api/metrics/route'
import * as rulesRoute from '@/app/api/alerts/rules/route'
import * as webhooksRoute from '@/app/api/alerts/webhooks/route'
import { updateWebhookSettings } from '@/lib/server/alerts/webhook-settings'
import { evaluateAlerts } from '@/lib/server/engines/alert-evaluator/evaluate-alerts'
import { saveFailedRun, saveSuccessfulRun, selectRun, type NewFinding } from '@/lib/server/topology/findings-store'
import type { FindingDto } from '@/lib/shared/schemas/topology'
import { ADMIN_AUTH, createTestUser } from '../helpers/auth'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'

const VHOST = 'shop'
const MINUTE = 60_000

const finding = (key: string, severity: NewFinding['severity'] = 'error', title = `trap ${key}`): NewFinding => ({
  key,
  kind: 'dlx-missing',
  severity,
  title,
  why: 'dead letters are dropped',
  fix: 'declare the exchange',
  evidence: [{ label: 'x-dead-letter-exchange', value: 'orders.retry (argument)' }],
  objects: [{ type: 'queue', name: `${key}.work` }],
  cycle: null,
  messagesQuery: null,
})

const request = (path: string, init: RequestInit & { authorization?: string } = {}) =>
  new Request(`http://lazarus.test${path}`, {
    ...init,
    headers: { 'content-type': 'application/json', origin: 'http://lazarus.test', authorization: init.authorization ?? ADMIN_AUTH.authorization },
  })

describe('topology findings: lifecycle, acknowledgement, metrics and alerts', () => {
  let db: TestDb
  let receiver: WebhookReceiver
  const t0 = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 60 * MINUTE)
  const at = (minutes: number) => new Date(t0.getTime() + minutes * MINUTE)
  const run = (minute: number, findings: NewFinding[]) =>
    saveSuccessfulRun({ sql: db.sql, vhost: VHOST, brokerVersion: '3.10.8', graph: { nodes: [], edges: [] }, checks: [], findings, now: at(minute) })
  const list = async (state: 'open' | 'all' = 'open'): Promise<FindingDto[]> =>
    (await (await findingsRoute.GET(request(`/api/topology/findings?vhost=${VHOST}&state=${state}`), { params: Promise.resolve({}) })).json()).findings

  beforeAll(async () => {
    db = await createTestDb()
    receiver = await startWebhookReceiver()
    await updateWebhookSettings({ db, input: { allowedHosts: ['127.0.0.1'] }, actor: 'ops' })
    const post = (handler: typeof rulesRoute.POST, body: unknown) => handler(request('/api/alerts', { method: 'POST', body: JSON.stringify(body) }), { params: Promise.resolve({}) })
    expect((await post(webhooksRoute.POST, { url: receiver.url })).status).toBe(201)
    expect((await post(rulesRoute.POST, { kind: 'new-finding', minSeverity: 'warning' })).status).toBe(201)
  })
  afterAll(async () => {
    await receiver?.close()
    await db?.drop()
  })

  it('a finding is opened once, seen again by later runs, resolved when gone, and opens anew when it comes back', async () => {
    expect(await run(1, [finding('a'), finding('b', 'info')])).toEqual({ opened: 2, resolved: 0 })
    expect(await run(2, [finding('a'), finding('b', 'info')])).toEqual({ opened: 0, resolved: 0 })
    let open = await list()
    expect(open.map((f) => [f.title, f.firstSeenAt, f.lastSeenAt])).toEqual(
      expect.arrayContaining([
        ['trap a', at(1).toISOString(), at(2).toISOString()],
        ['trap b', at(1).toISOString(), at(2).toISOString()],
      ]),
    )
    // Worst first.
    expect(open.map((f) => f.severity)).toEqual(['error', 'info'])

    expect(await run(3, [finding('a')])).toEqual({ opened: 0, resolved: 1 })
    open = await list()
    expect(open.map((f) => f.title)).toEqual(['trap a'])
    const all = await list('all')
    expect(all.find((f) => f.title === 'trap b')?.resolvedAt).toBe(at(3).toISOString())

    expect(await run(4, [finding('a'), finding('b', 'info')])).toEqual({ opened: 1, resolved: 0 })
    const back = (await list()).find((f) => f.title === 'trap b')!
    expect(back).toMatchObject({ firstSeenAt: at(4).toISOString(), resolvedAt: null })
  })

  it('a failed run keeps the last good findings and says why', async () => {
    await saveFailedRun({ sql: db.sql, vhost: VHOST, error: 'management API: connection refused', now: at(5) })
    expect((await list()).map((f) => f.title).sort()).toEqual(['trap a', 'trap b'])
    const stored = await selectRun({ sql: db.sql, vhost: VHOST })
    expect(stored).toMatchObject({ error: 'management API: connection refused', broker_version: '3.10.8' })
    expect(stored?.checked_at?.toISOString()).toBe(at(4).toISOString())
  })

  it('a run whose writes break midway leaves the previous findings whole', async () => {
    await db.sql.exec(`
      CREATE FUNCTION refuse_resolve() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$;
      CREATE TRIGGER refuse_resolve BEFORE UPDATE OF resolved_at ON topology_findings FOR EACH ROW WHEN (NEW.resolved_at IS NOT NULL) EXECUTE FUNCTION refuse_resolve();
    `)
    try {
      await expect(run(6, [finding('c')])).rejects.toThrow(/disk full/)
    } finally {
      await db.sql.exec('DROP TRIGGER refuse_resolve ON topology_findings; DROP FUNCTION refuse_resolve();')
    }
    expect((await list()).map((f) => f.title).sort()).toEqual(['trap a', 'trap b'])
    expect((await selectRun({ sql: db.sql, vhost: VHOST }))?.checked_at?.toISOString()).toBe(at(4).toISOString())
  })

  it('operators acknowledge with a reason, audited; viewers cannot; a resolved finding cannot be', async () => {
    const [a] = (await list()).filter((f) => f.title === 'trap a')
    const viewer = await createTestUser(db, 'topology-viewer', [{ role: 'viewer' }])
    const operator = await createTestUser(db, 'topology-operator', [{ role: 'operator' }])
    const ack = (id: string, body: unknown, authorization: string) =>
      acknowledgeRoute.POST(request(`/api/topology/findings/${id}/acknowledge`, { method: 'POST', body: JSON.stringify(body), authorization }), { params: Promise.resolve({ id }) })

    expect((await ack(a.id, { reason: 'known' }, viewer.authorization)).status).toBe(403)
    const short = await ack(a.id, { reason: '' }, operator.authorization)
    expect(short.status).toBe(400)
    expect((await short.json()).error.message).toMatch(/reason/)
    expect((await ack('999999', { reason: 'known, ticket OPS-1' }, operator.authorization)).status).toBe(404)

    const done = await ack(a.id, { reason: 'known, ticket OPS-1' }, operator.authorization)
    expect(done.status).toBe(200)
    expect((await done.json()).acknowledged).toMatchObject({ by: operator.actor, reason: 'known, ticket OPS-1' })
    const { rows } = await db.sql.query<{ actor: string; action: string; subject_id: string }>(
      `SELECT actor, action, subject_id FROM audit_log WHERE action = 'topology.finding-acknowledged'`,
    )
    expect(rows).toEqual([{ actor: operator.actor, action: 'topology.finding-acknowledged', subject_id: a.id }])

    await run(7, [finding('b', 'info')])
    expect((await ack(a.id, { reason: 'again' }, operator.authorization)).status).toBe(409)
    // Back after it was resolved: a new occurrence, nobody has acknowledged it yet.
    await run(8, [finding('a'), finding('b', 'info')])
    expect((await list()).find((f) => f.title === 'trap a')?.acknowledged).toBeNull()
  })

  it('metrics count open findings nobody acknowledged, by severity and kind, zeros included', async () => {
    const response = await metricsRoute.GET(request('/api/metrics'), { params: Promise.resolve({}) })
    const text = await response.text()
    expect(text).toContain('lazarus_topology_findings{severity="error",kind="dlx-missing"} 1')
    expect(text).toContain('lazarus_topology_findings{severity="info",kind="dlx-missing"} 1')
    expect(text).toContain('lazarus_topology_findings{severity="warning",kind="retry-loop-no-exit"} 0')
  })

  it('a new-finding rule announces each finding opened at its severity or worse, once', async () => {
    await evaluateAlerts({ db, now: at(9), publicUrl: 'https://lazarus.example.com' })
    await run(10, [finding('a'), finding('b', 'info'), finding('d', 'warning', 'DLX "x" has no binding')])
    await evaluateAlerts({ db, now: at(10), publicUrl: 'https://lazarus.example.com' })
    await evaluateAlerts({ db, now: at(11), publicUrl: 'https://lazarus.example.com' })
    const announced = receiver.bodies.flatMap((b) => b.alerts).filter((a) => a.kind === 'new-finding')
    // a (reopened at minute 8) once, d (opened at 10) once; b is only info, below the rule's warning.
    expect(announced.map((a) => a.subject.label).sort()).toEqual(['DLX "x" has no binding', 'trap a'])
    const d = announced.find((a) => a.subject.label === 'DLX "x" has no binding')!
    expect(d.subject.type).toBe('finding')
    expect(d.text).toContain(`<https://lazarus.example.com/topology?finding=${d.subject.id}&vhost=shop|Open in Lazarus>`)
  })
})
