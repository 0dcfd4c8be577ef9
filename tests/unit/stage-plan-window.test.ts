import { describe, expect, it } from 'vitest'
import { retryTtlSecondsFromGraph } from '@/lib/server/replay/stage-plan'
import type { TopologyNodeDto } from '@/lib/shared/schemas/topology'

const queue = (name: string, role: 'work' | 'delay' | 'dlq' | 'other', ttl?: number): TopologyNodeDto => ({
  id: `q:${name}`, type: 'queue', name, queueType: 'classic', role, sourceId: null, severity: null,
  settings: ttl === undefined ? [] : [{ key: 'message-ttl', value: ttl, from: 'argument' }],
  stats: {} as never,
})

describe('the observation window from the retry tiers', () => {
  it('sums the message TTLs of the DLQ application\'s delay queues', () => {
    const graph = { nodes: [queue('orders.work', 'work'), queue('orders.retry.5s', 'delay', 5000), queue('orders.retry.30s', 'delay', 30_000), queue('orders.dlq', 'dlq'), queue('billing.retry', 'delay', 60_000)], edges: [] }
    expect(retryTtlSecondsFromGraph(graph, 'orders.dlq')).toBe(35)
  })

  it('is unknown without delay queues of the same application', () => {
    expect(retryTtlSecondsFromGraph({ nodes: [queue('orders.dlq', 'dlq'), queue('billing.retry', 'delay', 60_000)], edges: [] }, 'orders.dlq')).toBeNull()
  })
})
