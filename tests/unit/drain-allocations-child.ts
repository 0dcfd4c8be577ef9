/**
 * Child process of drain-allocations.test.ts: the heap bytes the drainer's per-delivery work allocates, for a
 * realistic dead letter (1 KiB JSON body, Spring-style failure headers with a stack trace, two x-death entries, as
 * bench:drain publishes them). Per delivery: amqplib's header decode (the typed codec Lazarus installs) and buildRow,
 * which classifies the body, normalises the failure, fingerprints the message and builds the row.
 *
 * Run without optimising compilers (--no-opt --no-maglev): escape analysis would remove allocations on a schedule of
 * its own, so two runs could differ. With a young generation large enough that no collection runs while measuring
 * (checked with GCProfiler), the growth of the used heap is exactly what the deliveries allocated. Prints JSON.
 */
import { createRequire } from 'node:module'
import path from 'node:path'
import { GCProfiler, getHeapStatistics } from 'node:v8'
import type { AmqplibCodec } from '@/lib/server/platform/broker/typed-fields'
import '@/lib/server/platform/broker/amqplib'
import { buildRow } from '@/lib/server/ingest/build-row'
import { springFailureHeaders } from '@/lib/bench/spring-dead-letter'

const nodeRequire = createRequire(import.meta.url)
const codec = nodeRequire(path.join(path.dirname(nodeRequire.resolve('amqplib')), 'lib', 'codec.js')) as AmqplibCodec

const STACK = [
  'org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method threw exception',
  ...Array.from({ length: 24 }, (_, i) => `\tat com.acme.orders.service.Frame${i}.handle(Frame${i}.java:${100 + i})`),
].join('\n')
const NOW = 1_780_000_000

function delivery(i: number) {
  const body = Buffer.alloc(1024, ' ')
  body.write(JSON.stringify({ orderId: `order-${i}`, customer: `c-${i % 977}`, lines: [{ sku: 48213 + (i % 50), qty: 1 + (i % 3) }], id: `0d9c6a52-0000-4000-8000-${String(i).padStart(12, '0')}` }))
  const headers = springFailureHeaders({ index: i, nowSeconds: NOW, stack: STACK })
  const encoded = Buffer.alloc(16 * 1024)
  const length = codec.encodeTable(encoded, headers, 0)
  // What amqplib hands its decoder: the table's fields, without their length prefix.
  return { body, fields: encoded.subarray(4, length) }
}

const COUNT = 400
const deliveries = Array.from({ length: COUNT }, (_, i) => delivery(i))
const now = new Date(NOW * 1000)
let last: ReturnType<typeof buildRow> | undefined

function drainAll() {
  for (const d of deliveries) {
    const headers = codec.decodeFields(d.fields)
    last = buildRow({
      queue: 'orders.dlq',
      message: {
        content: d.body,
        fields: { exchange: '', routingKey: 'orders.dlq', redelivered: false, deliveryTag: 1, consumerTag: 'lazarus', messageCount: undefined },
        properties: { contentType: 'application/json', messageId: 'm', correlationId: 'c', timestamp: NOW, appId: 'orders', deliveryMode: 2, headers },
      } as never,
      maxBodyBytes: 1024 * 1024,
      now,
    })
  }
}

// Warm-up: inline caches, feedback vectors and caches the code fills once are not per-delivery work.
for (let round = 0; round < 3; round++) drainAll()

const rounds: { bytes: number; collections: number }[] = []
for (let round = 0; round < 3; round++) {
  ;(globalThis as { gc?: () => void }).gc?.()
  const profiler = new GCProfiler()
  profiler.start()
  const before = getHeapStatistics().used_heap_size
  drainAll()
  const after = getHeapStatistics().used_heap_size
  rounds.push({ bytes: after - before, collections: profiler.stop()?.statistics.length ?? 0 })
}

process.stdout.write(
  JSON.stringify({
    count: COUNT,
    rounds,
    row: { errorType: last?.errorType, failureKind: last?.failureKind, originQueue: last?.originQueue, attempts: last?.attempts, bodyEncoding: last?.bodyEncoding },
  }),
)
