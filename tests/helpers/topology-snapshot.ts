import type { BrokerSnapshot, SnapshotBinding, SnapshotExchange, SnapshotPolicy, SnapshotQueue } from '@/lib/server/topology/broker-snapshot'

/** Hand-built snapshot parts for the doctor's unit tests: only what a test cares about, the rest defaulted. */
export function snapQueue(name: string, overrides: Partial<SnapshotQueue> = {}): SnapshotQueue {
  return {
    name, type: 'classic', durable: true, autoDelete: false, exclusive: false, arguments: {}, policy: null, operatorPolicy: null,
    effectivePolicyDefinition: null, messages: 0, consumers: 0, rates: { publish: null, deliverGet: null, redeliver: null, ack: null },
    ...overrides,
  }
}

export const snapExchange = (name: string, type = 'direct', args: Record<string, unknown> = {}): SnapshotExchange => ({ name, type, durable: true, autoDelete: false, internal: false, arguments: args })

export const snapBinding = (source: string, destination: string, routingKey: string, destinationType: 'queue' | 'exchange' = 'queue'): SnapshotBinding => ({ source, destination, destinationType, routingKey, arguments: {} })

export const snapPolicy = (name: string, pattern: string, definition: Record<string, unknown>, priority = 0, applyTo: SnapshotPolicy['applyTo'] = 'queues'): SnapshotPolicy => ({ name, pattern, applyTo, priority, definition })

export function snapshotOf(parts: Partial<BrokerSnapshot>): BrokerSnapshot {
  return { vhost: 'v', brokerVersion: '3.10.8', queues: [], exchanges: [], bindings: [], policies: [], operatorPolicies: [], ...parts }
}
