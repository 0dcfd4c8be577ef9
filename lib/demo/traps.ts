import type { Channel, ChannelModel } from 'amqplib'
import type { FindingKind } from '../shared/schemas/topology'
import { onThrowawayChannel } from './topology'

/**
 * The demo's deliberate traps (README: Quick start): one small topology per kind of finding the topology doctor can
 * tell from the broker's definitions alone (docs/topology.md#findings), so a newcomer's /topology page shows what the
 * doctor finds instead of "No findings". Every object is named `<prefix>.trap.<kind>…` and carries the argument
 * `demo-trap` saying it is deliberate (RabbitMQ keeps arguments it does not know, and the topology page shows them).
 * Nothing is ever published to them.
 *
 * The other kinds need more than declarations: consumers that are connected (no-dlx), traffic (requeue-to-head) or
 * letters Lazarus has stored (retry-count-high, delay-mixed-ttl, message-near-size-limit, unknown-x-death-queue).
 */

type TrapExchange = { name: string; type: 'direct' | 'fanout' | 'headers' }
type TrapQueue = { name: string; arguments?: Record<string, string | number> }
type TrapBinding = { exchange: string; queue: string; key: string }

export type DemoTrap = {
  /** The finding the doctor raises for it, and only that one. */
  kind: FindingKind
  /** What is wrong on purpose, for the label and the seed's summary. */
  what: string
  exchanges: TrapExchange[]
  queues: TrapQueue[]
  bindings: TrapBinding[]
}

type TrapObjects = Pick<DemoTrap, 'exchanges' | 'queues' | 'bindings'>

/** The argument that labels every trap object. */
export const TRAP_LABEL = 'demo-trap'

const QUORUM = { 'x-queue-type': 'quorum' }
/** A DLQ that is no trap itself: bounded, pushing back when full. */
const BOUNDED = { 'x-max-length': 10_000, 'x-overflow': 'reject-publish' }
const DAY_MS = 86_400_000

/** An application's queue `<base>.work` on `<base>` with key `key`, its dead letters parked in a sound `<base>.dlq`. */
function parkedWork(base: string, key: string, workArguments: Record<string, string | number>): TrapObjects {
  return {
    exchanges: [
      { name: base, type: 'direct' },
      { name: `${base}.parking`, type: 'fanout' },
    ],
    queues: [
      { name: `${base}.dlq`, arguments: BOUNDED },
      { name: `${base}.work`, arguments: { 'x-dead-letter-exchange': `${base}.parking`, ...workArguments } },
    ],
    bindings: [
      { exchange: `${base}.parking`, queue: `${base}.dlq`, key: '' },
      { exchange: base, queue: `${base}.work`, key },
    ],
  }
}

/** The traps under `prefix`, one per kind; declaring them twice changes nothing. */
export function demoTraps(prefix: string): DemoTrap[] {
  const base = (kind: FindingKind) => `${prefix}.trap.${kind}`
  const traps: DemoTrap[] = []
  const add = (kind: FindingKind, what: string, build: (b: string) => TrapObjects) => traps.push({ kind, what, ...build(base(kind)) })

  add('dlx-missing', 'the queue dead-letters to an exchange that does not exist', (b): TrapObjects => ({
    exchanges: [{ name: b, type: 'direct' }],
    queues: [{ name: `${b}.work`, arguments: { 'x-dead-letter-exchange': `${b}.nowhere` } }],
    bindings: [{ exchange: b, queue: `${b}.work`, key: 'order.created' }],
  }))
  add('dlx-unroutable', 'the dead-letter exchange has no binding for the dead letters', (b): TrapObjects => ({
    exchanges: [
      { name: b, type: 'direct' },
      { name: `${b}.dlx`, type: 'direct' },
    ],
    queues: [{ name: `${b}.work`, arguments: { 'x-dead-letter-exchange': `${b}.dlx` } }],
    bindings: [{ exchange: b, queue: `${b}.work`, key: 'order.created' }],
  }))
  add('dlx-routing-unknown', 'the dead-letter exchange routes by headers, so where dead letters go depends on each message', (b): TrapObjects => ({
    exchanges: [
      { name: b, type: 'direct' },
      { name: `${b}.dlx`, type: 'headers' },
    ],
    queues: [
      { name: `${b}.dlq`, arguments: BOUNDED },
      { name: `${b}.work`, arguments: { 'x-dead-letter-exchange': `${b}.dlx` } },
    ],
    bindings: [
      { exchange: `${b}.dlx`, queue: `${b}.dlq`, key: '' },
      { exchange: b, queue: `${b}.work`, key: 'order.created' },
    ],
  }))
  add('retry-loop-no-exit', 'work and delay queue retry each other for ever: no parking exchange leads to a DLQ', (b): TrapObjects => ({
    exchanges: [
      { name: b, type: 'direct' },
      { name: `${b}.retry`, type: 'direct' },
      { name: `${b}.return`, type: 'direct' },
    ],
    queues: [
      { name: `${b}.work`, arguments: { 'x-dead-letter-exchange': `${b}.retry` } },
      { name: `${b}.delay`, arguments: { 'x-message-ttl': 5_000, 'x-dead-letter-exchange': `${b}.return` } },
    ],
    bindings: [
      { exchange: b, queue: `${b}.work`, key: 'order.created' },
      { exchange: `${b}.retry`, queue: `${b}.delay`, key: 'order.created' },
      { exchange: `${b}.return`, queue: `${b}.work`, key: 'order.created' },
    ],
  }))
  add('delay-no-queue-ttl', 'the delay queue has no queue-level TTL, so each retry waits as long as its own expiration says', (b): TrapObjects => ({
    exchanges: [
      { name: b, type: 'direct' },
      { name: `${b}.retry`, type: 'direct' },
      { name: `${b}.return`, type: 'direct' },
      { name: `${b}.parking`, type: 'fanout' },
    ],
    queues: [
      { name: `${b}.dlq`, arguments: BOUNDED },
      { name: `${b}.work`, arguments: { 'x-dead-letter-exchange': `${b}.retry` } },
      { name: `${b}.delay`, arguments: { 'x-dead-letter-exchange': `${b}.return` } },
    ],
    bindings: [
      { exchange: `${b}.parking`, queue: `${b}.dlq`, key: '' },
      { exchange: b, queue: `${b}.work`, key: 'order.created' },
      { exchange: `${b}.retry`, queue: `${b}.delay`, key: 'order.created' },
      { exchange: `${b}.return`, queue: `${b}.work`, key: 'order.created' },
    ],
  }))
  add('dlq-unbounded', 'the dead-letter queue has no length limit', (b): TrapObjects => ({
    exchanges: [{ name: `${b}.parking`, type: 'fanout' }],
    queues: [{ name: `${b}.dlq` }],
    bindings: [{ exchange: `${b}.parking`, queue: `${b}.dlq`, key: '' }],
  }))
  add('dlq-ttl-no-dlx', 'the dead-letter queue expires its dead letters after a day, with nowhere to send them', (b): TrapObjects => ({
    exchanges: [{ name: `${b}.parking`, type: 'fanout' }],
    queues: [{ name: `${b}.dlq`, arguments: { ...BOUNDED, 'x-message-ttl': DAY_MS } }],
    bindings: [{ exchange: `${b}.parking`, queue: `${b}.dlq`, key: '' }],
  }))
  add('quorum-delivery-limit-no-dlx', 'a quorum queue drops a message after 5 deliveries: it has no dead-letter exchange', (b): TrapObjects => ({
    exchanges: [{ name: b, type: 'direct' }],
    queues: [{ name: `${b}.work`, arguments: { ...QUORUM, ...BOUNDED, 'x-delivery-limit': 5 } }],
    bindings: [{ exchange: b, queue: `${b}.work`, key: 'order.created' }],
  }))
  add('quorum-at-most-once', 'a quorum queue dead-letters at-most-once (the default), so a dead letter the DLQ cannot take is lost', (b) =>
    parkedWork(b, 'order.created', { ...QUORUM }),
  )
  add('at-least-once-fallback', 'a quorum queue asks for at-least-once dead-lettering without overflow reject-publish, so it runs at-most-once', (b) =>
    parkedWork(b, 'order.created', { ...QUORUM, 'x-dead-letter-strategy': 'at-least-once' }),
  )
  add('expires-with-dlx', 'the queue is deleted with its messages after a week unused; its dead-letter exchange gets none of them', (b) =>
    parkedWork(b, 'order.created', { 'x-expires': 7 * DAY_MS }),
  )
  add('drop-head-no-dlx', 'the queue drops its oldest message when it holds 1,000 (drop-head) and has no dead-letter exchange', (b): TrapObjects => ({
    exchanges: [{ name: b, type: 'direct' }],
    queues: [{ name: `${b}.work`, arguments: { 'x-max-length': 1_000 } }],
    bindings: [{ exchange: b, queue: `${b}.work`, key: 'order.created' }],
  }))
  add('dead-letter-cycle-no-reject', 'two queues expire messages into each other and nobody consumes them: the broker drops what comes round', (b): TrapObjects => ({
    exchanges: [
      { name: `${b}.to-a`, type: 'fanout' },
      { name: `${b}.to-b`, type: 'fanout' },
    ],
    queues: [
      { name: `${b}.a`, arguments: { 'x-message-ttl': 60_000, 'x-dead-letter-exchange': `${b}.to-b` } },
      { name: `${b}.b`, arguments: { 'x-message-ttl': 60_000, 'x-dead-letter-exchange': `${b}.to-a` } },
    ],
    bindings: [
      { exchange: `${b}.to-a`, queue: `${b}.a`, key: '' },
      { exchange: `${b}.to-b`, queue: `${b}.b`, key: '' },
    ],
  }))
  return traps
}

const label = (trap: DemoTrap) => ({ [TRAP_LABEL]: `deliberate trap for the topology doctor (${trap.kind}): ${trap.what}` })

async function declareTrap(ch: Channel, trap: DemoTrap): Promise<void> {
  for (const x of trap.exchanges) await ch.assertExchange(x.name, x.type, { durable: true, arguments: label(trap) })
  for (const q of trap.queues) await ch.assertQueue(q.name, { durable: true, arguments: { ...q.arguments, ...label(trap) } })
  for (const b of trap.bindings) await ch.bindQueue(b.queue, b.exchange, b.key)
}

/** Declares the traps, each on a channel of its own: a refused declaration closes only that one. */
export async function declareDemoTraps(connection: ChannelModel, traps: readonly DemoTrap[]): Promise<void> {
  for (const trap of traps) await onThrowawayChannel(connection, (ch) => declareTrap(ch, trap))
}

/** Removes what declareDemoTraps created. For tests and cleaning up after a demo. */
export async function deleteDemoTraps(connection: ChannelModel, traps: readonly DemoTrap[]): Promise<void> {
  await onThrowawayChannel(connection, async (ch) => {
    for (const trap of traps) {
      for (const q of trap.queues) await ch.deleteQueue(q.name)
      for (const x of trap.exchanges) await ch.deleteExchange(x.name)
    }
  })
}
