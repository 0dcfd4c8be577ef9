import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH } from '../helpers/auth'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import type { ChannelModel, ConfirmChannel } from '@/lib/server/platform/broker/amqplib'
import * as metricsRoute from '@/app/api/metrics/route'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import { brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { drainQueues, storedCount } from '../helpers/drainer'
import { createTestDb, type TestDb } from '../helpers/test-db'

type Family = { name: string; type: string; metrics: { value?: string; labels?: Record<string, string> }[] }

async function scrape(): Promise<{ contentType: string | null; families: Map<string, Family> }> {
  const response = await metricsRoute.GET(new Request('http://lazarus.test/api/metrics', { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })
  expect(response.status).toBe(200)
  const text = await response.text()
  const families = new Map((parsePrometheusTextFormat(text) as Family[]).map((f) => [f.name, f]))
  return { contentType: response.headers.get('content-type'), families }
}

const total = (families: Map<string, Family>, name: string) => (families.get(name)?.metrics ?? []).reduce((sum, m) => sum + Number(m.value), 0)

const sample = (families: Map<string, Family>, name: string, labels: Record<string, string> = {}) => {
  const family = families.get(name)
  const metric = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
  return metric ? Number(metric.value) : undefined
}

describe('GET /api/metrics', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: ConfirmChannel
  let drainer: Drainer
  const queue = uniqueName('metrics_dlq')
  let sourceId: string

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createConfirmChannel()
    await channel.assertQueue(queue, { durable: true })
    ;({ drainer, sourceIds: { [queue]: sourceId } } = await drainQueues(db, [queue]))
  })
  afterAll(async () => {
    await drainer?.stop()
    await channel?.deleteQueue(queue).catch(() => {})
    await connection?.close().catch(() => {})
    await db?.drop()
  })

  const publish = async (count: number, tag: string) => {
    for (let i = 0; i < count; i++) {
      channel.sendToQueue(queue, Buffer.from(`{"n":${i}}`), { headers: { 'x-exception-message': `boom ${tag}`, 'x-exception-type': 'com.acme.Boom' }, messageId: `${tag}-${i}` })
    }
    await channel.waitForConfirms()
  }

  it('is Prometheus text whose counters move as messages are drained', async () => {
    await publish(7, 'first')
    await waitFor(async () => (await storedCount(db.sql, sourceId)) === 7 || null, { what: '7 stored' })
    // The management API lists a new queue's depth after its next statistics tick (5 s by default).
    const first = await waitFor(async () => {
      const s = await scrape()
      return sample(s.families, 'lazarus_dlq_depth_messages', { source: queue }) !== undefined ? s : null
    }, { what: 'depth listed', timeoutMs: 20_000, intervalMs: 500 })
    expect(first.contentType).toMatch(/^text\/plain; version=0\.0\.4/)
    expect(first.families.get('lazarus_ingested_messages_total')?.type).toBe('COUNTER')
    expect(sample(first.families, 'lazarus_ingested_messages_total', { source: queue })).toBe(7)
    expect(sample(first.families, 'lazarus_dlq_depth_messages', { source: queue })).toBe(0)
    expect(sample(first.families, 'lazarus_drain_lag_seconds', { source: queue })).toBe(0)
    expect(total(first.families, 'lazarus_group_dead_messages')).toBe(7)
    expect(sample(first.families, 'lazarus_replayed_messages_total', { outcome: 'confirmed' })).toBe(0)
    expect(sample(first.families, 'lazarus_search_backlog_rows')).toBeGreaterThan(0)
    expect(first.families.has('lazarus_process_resident_memory_bytes')).toBe(true)

    await publish(5, 'second')
    await waitFor(async () => (await storedCount(db.sql, sourceId)) === 12 || null, { what: '12 stored' })
    const second = await scrape()
    expect(sample(second.families, 'lazarus_ingested_messages_total', { source: queue })).toBe(12)
    expect(total(second.families, 'lazarus_group_dead_messages')).toBe(12)
    expect(sample(second.families, 'lazarus_error_groups')).toBe(2)
  })

  it('reports depth and lag for a source the drainer is not keeping up with', async () => {
    await drainer.stop()
    await publish(3, 'waiting')
    const { families } = await waitFor(async () => {
      const s = await scrape()
      return sample(s.families, 'lazarus_dlq_depth_messages', { source: queue }) === 3 ? s : null
    }, { what: 'depth 3 reported', timeoutMs: 20_000, intervalMs: 500 })
    expect(sample(families, 'lazarus_drain_lag_seconds', { source: queue })).toBeGreaterThan(0)
  })
})
