import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { buildRow } from '@/lib/server/ingest/build-row'
import type { GetMessage } from '@/lib/server/platform/broker/amqplib'
import { mergedPolicyDefinition, queueEffectiveSettings } from '@/lib/server/topology/effective-settings'
import { sampleQueueTtls } from '@/lib/server/topology/sample-queue-ttls'
import { emptyEvidence, readTopologyEvidence } from '@/lib/server/topology/topology-evidence'
import { waitFor } from '../helpers/broker'
import { ingestRow } from '../helpers/ingest-row'
import { management } from '../helpers/management'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { BOUNDED, declareWorkWithDlq, findingsOf, useTrapBeds } from '../helpers/topology-trap'

const put = async (path: string, body: unknown) => {
  const response = await management('PUT', path, body)
  if (!response.ok) throw new Error(`PUT ${path}: HTTP ${response.status} ${await response.text()}`)
}

// Traps seen in rates, made by policies, and read from stored letters: each in a fresh vhost.
describe('topology doctor: rates, policies and stored letters', () => {
  const bed = useTrapBeds()
  let db: TestDb
  beforeAll(async () => {
    db = await createTestDb()
  })
  afterAll(async () => {
    await db.drop()
  })

  it('finds a consumer requeueing to the head of its queue, from the redeliver and ack rates', async () => {
    const { channel, connection, snapshot, diagnose } = await bed('requeue')
    await declareWorkWithDlq(channel, { app: 'spin', work: 'spin.work', key: 'k', dlx: 'spin.dlx', dlq: 'spin.dlq' })
    for (let i = 0; i < 5; i++) channel.publish('spin', 'k', Buffer.from(`m${i}`))
    const consumer = await connection.createChannel()
    await consumer.prefetch(1)
    await consumer.consume('spin.work', (message) => message && consumer.nack(message, false, true))
    // Rates need two samples of the broker's statistics; wait for them rather than sleeping.
    await waitFor(async () => ((await snapshot()).queues.find((q) => q.name === 'spin.work')?.rates.redeliver ?? 0) >= 1, { timeoutMs: 60_000, intervalMs: 500, what: 'a redeliver rate' })
    const diagnosis = await diagnose()
    await consumer.close()
    expect(findingsOf(diagnosis)).toEqual([['requeue-to-head', ['spin.work']]])
    const labels = diagnosis.findings[0].evidence.map((e) => e.label)
    expect(labels).toEqual(expect.arrayContaining(['redeliver rate', 'ack rate', 'consumers']))
    expect(diagnosis.findings[0].fix).toContain('requeue=false')
  })

  it('finds a trap made by a policy, computing the same policy as the broker', async () => {
    const { channel, vhost, snapshot, diagnose } = await bed('policy_trap')
    await channel.assertExchange('app', 'direct')
    await channel.assertQueue('pol.work')
    await channel.bindQueue('pol.work', 'app', 'k')
    await put(`/api/policies/${encodeURIComponent(vhost.name)}/dlx-gone`, { pattern: '^pol\\.', definition: { 'dead-letter-exchange': 'gone', 'message-ttl': 60_000 }, 'apply-to': 'queues', priority: 1 })
    await put(`/api/policies/${encodeURIComponent(vhost.name)}/lower`, { pattern: '.*', definition: { 'max-length': 5 }, 'apply-to': 'queues', priority: 0 })
    await put(`/api/operator-policies/${encodeURIComponent(vhost.name)}/cap`, { pattern: '.*', definition: { 'message-ttl': 30_000 }, 'apply-to': 'queues', priority: 0 })
    const read = await waitFor(
      async () => {
        const s = await snapshot()
        const q = s.queues.find((x) => x.name === 'pol.work')
        return q?.policy === 'dlx-gone' && q.operatorPolicy === 'cap' ? { s, q } : null
      },
      { what: 'the policies applied' },
    )
    // RabbitMQ 3.10's own answer agrees with the doctor's match and merge.
    const settings = queueEffectiveSettings({ queue: read.q, snapshot: read.s })
    expect([settings.policy?.name, settings.operatorPolicy?.name]).toEqual(['dlx-gone', 'cap'])
    expect(read.q.effectivePolicyDefinition).toEqual(mergedPolicyDefinition(settings))
    expect(settings.byKey.get('message-ttl')).toMatchObject({ value: 30_000, from: 'operator-policy', policy: 'cap', overridden: [{ value: 60_000, from: 'policy', policy: 'dlx-gone' }] })

    const diagnosis = await diagnose()
    expect(findingsOf(diagnosis)).toEqual([['dlx-missing', ['pol.work', 'gone']]])
    expect(diagnosis.findings[0].evidence).toContainEqual({ label: 'dead-letter-exchange', value: 'gone (policy "dlx-gone")' })
  })

  it('clears an argument-level trap by a policy, and lets an operator policy win where it is lower', async () => {
    const { channel, vhost, snapshot, diagnose } = await bed('policy_fix')
    await channel.assertExchange('app', 'direct')
    await channel.assertExchange('app.dlx', 'fanout')
    await channel.assertQueue('fix.parked', { maxLength: 10 })
    await channel.bindQueue('fix.parked', 'app', 'k')
    await channel.assertQueue('op.work', { deadLetterExchange: 'app.dlx' })
    await channel.bindQueue('op.work', 'app', 'op')
    await channel.assertQueue('op.dlq', BOUNDED)
    await channel.bindQueue('op.dlq', 'app.dlx', '')
    expect(findingsOf(await diagnose())).toEqual([['drop-head-no-dlx', ['fix.parked']]])

    const name = encodeURIComponent(vhost.name)
    await put(`/api/policies/${name}/reject`, { pattern: '^fix\\.', definition: { overflow: 'reject-publish' }, 'apply-to': 'queues' })
    await put(`/api/policies/${name}/user`, { pattern: '^op\\.work$', definition: { expires: 7_200_000, 'max-length': 5 }, 'apply-to': 'queues' })
    await put(`/api/operator-policies/${name}/op`, { pattern: '^op\\.work$', definition: { expires: 3_600_000, 'max-length': 10 }, 'apply-to': 'queues' })
    await waitFor(async () => (await snapshot()).queues.filter((q) => q.policy !== null || q.operatorPolicy !== null).length === 2, { what: 'the policies applied' })
    const diagnosis = await diagnose()
    expect(findingsOf(diagnosis)).toEqual([['expires-with-dlx', ['op.work']]])
    expect(diagnosis.findings[0].evidence).toContainEqual({ label: 'expires', value: '3600000 (operator-policy "op"; overrides 7200000 from policy "user")' })
    const settingsOf = (queue: string) => {
      const node = diagnosis.nodes.find((n) => n.id === `q:${queue}`)
      return node?.type === 'queue' ? Object.fromEntries(node.settings.map((s) => [s.key, s])) : {}
    }
    expect(settingsOf('op.work')['max-length']).toMatchObject({ value: 5, from: 'policy', policy: 'user', overridden: [{ value: 10, from: 'operator-policy', policy: 'op' }] })
    expect(settingsOf('fix.parked').overflow).toMatchObject({ value: 'reject-publish', from: 'policy', policy: 'reject' })
  })

  it('reads mixed per-message TTLs, high retry counts and unseen queues from stored letters', async () => {
    const { channel, vhost, diagnose } = await bed('stored')
    await channel.assertExchange('retry.dlx', 'fanout')
    await channel.assertQueue('retry.delay', { deadLetterExchange: 'retry.dlx' })
    await channel.assertQueue('retry.dlq', BOUNDED)
    await channel.bindQueue('retry.dlq', 'retry.dlx', '')
    // Distinct bodies: the drainer's store counts identical letters once.
    ;['100', '300', '100'].forEach((expiration, i) => channel.sendToQueue('retry.delay', Buffer.from(`{"n":${i},"ttl":${expiration}}`), { expiration, contentType: 'application/json' }))
    await waitFor(async () => (await channel.checkQueue('retry.dlq')).messageCount === 3, { what: 'three expired letters' })
    const { rows } = await db.sql.query<{ id: string }>(`INSERT INTO sources (vhost, queue, enabled) VALUES ($1, 'retry.dlq', false) RETURNING id::text`, [vhost.name])
    const sourceId = rows[0].id
    const letters: GetMessage[] = []
    for (let i = 0; i < 3; i++) letters.push((await channel.get('retry.dlq')) as GetMessage)
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'retry.dlq', rows: letters.map((m) => buildRow({ queue: 'retry.dlq', message: { ...m, fields: { ...m.fields, consumerTag: 'doctor-test' } }, maxBodyBytes: 1 << 20 })) })
    letters.forEach((message) => channel.ack(message))
    const sources = [{ id: sourceId, queue: 'retry.dlq' }]

    const first = await diagnose({ evidence: await readTopologyEvidence({ sql: db.sql, vhost: vhost.name }), sources })
    expect(findingsOf(first)).toEqual([['delay-mixed-ttl', ['retry.delay']]])
    expect(first.findings[0].evidence).toContainEqual({ label: 'original-expiration values in stored letters (ms)', value: '100, 300' })
    expect(first.findings[0].messagesQuery).toBe(`source=${sourceId}&death.queue=retry.delay&death.reason=expired`)

    // Letters that went round a queue of another vhost 15 times.
    const death = (queue: string, count: number) => JSON.stringify({ 'x-death': { t: 'A', v: [{ t: 'F', v: { queue: { t: 'S', v: queue }, reason: { t: 'S', v: 'rejected' }, count: { t: 'l', v: String(count) } } }] } })
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'retry.dlq', rows: [ingestRow({ headersJson: death('orders.elsewhere', 15) }), ingestRow({ headersJson: death('orders.elsewhere', 3), body: Buffer.alloc(2000, 'a') })] })
    const evidence = await readTopologyEvidence({ sql: db.sql, vhost: vhost.name, nearSizeBytes: 1000 })
    expect(evidence.sources).toEqual([{ sourceId, queue: 'retry.dlq', letters: 5, deathQueues: ['orders.elsewhere', 'retry.delay'], nearSizeLetters: 1, largestBody: 2000 }])
    expect(evidence.deathQueues.find((d) => d.queue === 'orders.elsewhere')).toMatchObject({ letters: 2, maxCount: 15, expirations: [], sourceIds: [sourceId] })
    const second = await diagnose({ evidence, sources })
    expect(findingsOf(second)).toEqual([
      ['delay-mixed-ttl', ['retry.delay']],
      ['retry-count-high', ['orders.elsewhere']],
      ['unknown-x-death-queue', ['retry.dlq', 'orders.elsewhere']],
    ])
    expect(second.findings.find((f) => f.kind === 'retry-count-high')?.messagesQuery).toBe(`source=${sourceId}&death.queue=orders.elsewhere&death.count%3E=11`)
  })

  it('samples the per-message TTLs of a classic queue, puts the messages back, and refuses quorum queues', async () => {
    const { channel, vhost, diagnose } = await bed('sample')
    await channel.assertExchange('jobs', 'direct')
    await channel.assertExchange('jobs.parking', 'fanout')
    await channel.assertQueue('jobs.work', { arguments: { 'x-dead-letter-exchange': 'jobs.retry' } })
    await channel.assertExchange('jobs.retry', 'direct')
    await channel.bindQueue('jobs.work', 'jobs', 'job')
    await channel.assertQueue('jobs.delay', { deadLetterExchange: 'jobs', deadLetterRoutingKey: 'job' })
    await channel.bindQueue('jobs.delay', 'jobs.retry', 'job')
    await channel.assertQueue('jobs.dlq', BOUNDED)
    await channel.bindQueue('jobs.dlq', 'jobs.parking', '')
    await channel.assertQueue('jobs.quorum', { durable: true, arguments: { 'x-queue-type': 'quorum' } })
    channel.sendToQueue('jobs.delay', Buffer.from('a'), { expiration: '60000' })
    channel.sendToQueue('jobs.delay', Buffer.from('b'), { expiration: '120000' })
    channel.sendToQueue('jobs.delay', Buffer.from('c'))
    await waitFor(async () => (await channel.checkQueue('jobs.delay')).messageCount === 3, { what: 'three messages' })

    const sample = await sampleQueueTtls({ vhost: vhost.name, queue: 'jobs.delay', count: 5 })
    expect(sample).toEqual({ queue: 'jobs.delay', expirations: ['60000', '120000', null] })
    expect((await channel.checkQueue('jobs.delay')).messageCount).toBe(3)
    await expect(sampleQueueTtls({ vhost: vhost.name, queue: 'jobs.quorum', count: 1 })).rejects.toMatchObject({ name: 'AppError', code: 'unprocessable' })
    await expect(sampleQueueTtls({ vhost: vhost.name, queue: 'no.such.queue', count: 1 })).rejects.toMatchObject({ name: 'AppError', code: 'not_found' })

    const diagnosis = await diagnose({ evidence: { ...emptyEvidence(), samples: [sample] } })
    const mixed = diagnosis.findings.find((f) => f.kind === 'delay-mixed-ttl')
    expect(mixed?.objects).toEqual([{ type: 'queue', name: 'jobs.delay' }])
    expect(mixed?.evidence).toContainEqual({ label: 'expirations in a sample of the queue', value: '120000, 60000, none' })
  })
})
