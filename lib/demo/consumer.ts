/**
 * `npm run demo:consumer` (lib/demo/consumer.ts [--prefix NAME], with the react-server condition, since the seed it
 * reads the demo's topology from uses Lazarus' own code): the demo apps' consumers, kept running after
 * `npm run demo:seed` so that replays from Lazarus land somewhere. A replayed message succeeds, or (about one in
 * three, the same ones every time) fails again and comes back to Lazarus as "failed again after replay"
 * (lib/demo/replayed.ts). Anything else in a work queue is processed (acked). Ctrl+C stops it.
 */
import { parseArgs } from 'node:util'
import amqp from 'amqplib'
import { handleReplayed, isReplayed, type ReplayTally } from './replayed'
import { demoTopologies } from './seed'

const { values } = parseArgs({ options: { prefix: { type: 'string' } } })
const prefix = values.prefix ?? process.env.DEMO_SEED_PREFIX ?? 'demo'
const url = process.env.AMQP_URL || 'amqp://guest:guest@127.0.0.1:5672'

const connection = await amqp.connect(url, { clientProperties: { connection_name: 'lazarus demo:consumer' } })
connection.on('error', (error: Error) => console.error(`demo:consumer: ${error.message}`))
const tally: ReplayTally = { replaysSucceeded: 0, replaysFailedAgain: 0 }
let processed = 0
for (const topology of demoTopologies(prefix)) {
  const ch = await connection.createConfirmChannel()
  // A missing queue closes the channel; the refusal below says what to do.
  ch.on('error', () => {})
  try {
    await ch.checkQueue(topology.workQueue)
  } catch {
    console.error(`demo:consumer: ${topology.workQueue} does not exist; run npm run demo:seed${prefix === 'demo' ? '' : ` -- --prefix ${prefix}`} first`)
    process.exit(1)
  }
  await ch.prefetch(50)
  await ch.consume(topology.workQueue, (msg) => {
    if (!msg) return
    if (isReplayed(msg)) return handleReplayed(ch, msg, topology.deadExchange, tally)
    processed++
    ch.ack(msg)
  })
}
console.log(`Consuming ${demoTopologies(prefix).map((t) => t.workQueue).join(', ')}: replay messages from Lazarus; Ctrl+C stops.`)
let shown = ''
setInterval(() => {
  const line = `replayed: ${tally.replaysSucceeded} succeeded, ${tally.replaysFailedAgain} failed again; other messages processed: ${processed}`
  if (line !== shown) console.log((shown = line))
}, 2_000)
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void connection.close().finally(() => process.exit(0)))
