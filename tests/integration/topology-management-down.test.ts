import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as topologyRoute from '@/app/api/topology/route'
import * as runsRoute from '@/app/api/topology/runs/route'
import { saveSuccessfulRun } from '@/lib/server/topology/findings-store'
import type { TopologyDto } from '@/lib/shared/schemas/topology'
import { ADMIN_AUTH } from '../helpers/auth'
import { createTestDb, type TestDb } from '../helpers/test-db'

// Nothing listens on port 1: the management API is down for this whole file (set before the configuration is read).
process.env.RABBITMQ_MANAGEMENT_URL = 'http://guest:guest@127.0.0.1:1'

/* A run that cannot read the broker must neither clear the findings (a clean bill nobody earned) nor fail the page. */
describe('topology doctor while the management API is down', () => {
  let db: TestDb

  beforeAll(async () => {
    db = await createTestDb()
    // A vhost is watched when a source drains from it.
    await db.sql.query(`INSERT INTO sources (vhost, queue, enabled) VALUES ('shop', 'shop.dlq', false)`)
    await saveSuccessfulRun({
      sql: db.sql,
      vhost: 'shop',
      brokerVersion: '3.10.8',
      graph: { nodes: [], edges: [] },
      checks: [{ kind: 'dlx-missing', checked: 3, raised: 1, description: 'queues with a DLX' }],
      findings: [{ key: 'dlx-missing|shop|queue:a', kind: 'dlx-missing', severity: 'error', title: 'DLX "x" of "a" does not exist', why: 'dropped', fix: 'declare it', evidence: [], objects: [{ type: 'queue', name: 'a' }], cycle: null, messagesQuery: null }],
      now: new Date('2026-12-01T10:00:00Z'),
    })
  })
  afterAll(async () => db?.drop())

  it('Run now answers 200 with the error beside the last good graph and its findings', async () => {
    const request = new Request('http://lazarus.test/api/topology/runs', { method: 'POST', headers: { ...ADMIN_AUTH, 'content-type': 'application/json', origin: 'http://lazarus.test' }, body: JSON.stringify({ vhost: 'shop' }) })
    const response = await runsRoute.POST(request, { params: Promise.resolve({}) })
    expect(response.status).toBe(200)
    const body = (await response.json()) as TopologyDto
    expect(body.error).toMatch(/Could not read the broker's topology through the management API/)
    expect(body.checkedAt).toBe('2026-12-01T10:00:00.000Z')
    expect(body.findings.map((f) => f.title)).toEqual(['DLX "x" of "a" does not exist'])
    expect(body.checks).toHaveLength(1)
    // No LAZARUS_NATS_URL here: the doctor reads no NATS server, and says so.
    expect(body.jetstream).toEqual({ configured: false, checkedAt: null, serverVersion: null, error: null })

    const read = await topologyRoute.GET(new Request('http://lazarus.test/api/topology?vhost=shop', { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })
    expect(((await read.json()) as TopologyDto).error).toBe(body.error)
  })

  it('Run now refuses a vhost nobody watches, and leaves no row for it', async () => {
    const request = new Request('http://lazarus.test/api/topology/runs', { method: 'POST', headers: { ...ADMIN_AUTH, 'content-type': 'application/json', origin: 'http://lazarus.test' }, body: JSON.stringify({ vhost: 'elsewhere' }) })
    const response = await runsRoute.POST(request, { params: Promise.resolve({}) })
    expect(response.status).toBe(422)
    expect((await response.json()).error.message).toMatch(/"elsewhere" is not watched: the doctor reads .*shop/)
    expect((await db.sql.query(`SELECT 1 FROM topology_runs WHERE vhost = 'elsewhere'`)).rows).toEqual([])
  })

  it('a vhost never read says so instead of showing an empty, clean graph', async () => {
    const read = await topologyRoute.GET(new Request('http://lazarus.test/api/topology?vhost=never', { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })
    expect(await read.json()).toMatchObject({ vhost: 'never', checkedAt: null, error: null, nodes: [], findings: [], checks: [] })
  })
})
