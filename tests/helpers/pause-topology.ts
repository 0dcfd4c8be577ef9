import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { startPauseRuntime, type PauseRuntime } from '@/lib/server/engines/release/pause-runtime'
import { getConfig } from '@/lib/server/platform/config'
import { AMQP_URL, brokerConnection, uniqueName } from './broker'
import { createTestDb, type TestDb } from './test-db'

/** What a pause test starts from: a fresh database, the pause runtime on the file's topology, and an app connection. */
export type PauseTestbed = { db: TestDb; runtime: PauseRuntime; app: ChannelModel }

/**
 * A private control exchange and hold queue for one test file. The real names are shared by every Lazarus on this
 * broker: a dev server running meanwhile would take the file's held messages (the hold queue has a single active
 * consumer) and its pause events would reach the file's listeners. Call at module level, before anything reads the
 * configuration; it checks that the configuration took the names.
 */
export function isolatePauseTopology() {
  const control = uniqueName('control')
  const hold = uniqueName('hold')
  process.env.LAZARUS_CONTROL_EXCHANGE = control
  process.env.LAZARUS_HOLD_QUEUE = hold
  return {
    control,
    hold,
    config: { AMQP_URL, LAZARUS_CONTROL_EXCHANGE: control, LAZARUS_HOLD_QUEUE: hold },
    /** The options a guard needs to use them. */
    guardOptions: { controlExchange: control, holdExchange: hold },
    assertConfigured() {
      const config = getConfig()
      if (config.LAZARUS_CONTROL_EXCHANGE !== control || config.LAZARUS_HOLD_QUEUE !== hold) {
        throw new Error('the configuration was read before isolatePauseTopology() set the names')
      }
    },
    /**
     * A fresh database, the pause runtime (its topology declared, held messages swept every 300 ms) and a broker
     * connection for the test's application, with `queues` declared (not durable: they go with the broker).
     */
    async startTestbed(queues: string[] = []): Promise<PauseTestbed> {
      this.assertConfigured()
      const db = await createTestDb()
      const runtime = await startPauseRuntime({ db, config: this.config, sweepMs: 300 })
      await runtime.topologyReady
      const app = await brokerConnection()
      const setup = await app.createChannel()
      for (const queue of queues) await setup.assertQueue(queue, { durable: false })
      await setup.close()
      return { db, runtime, app }
    },
    async cleanup() {
      const connection = await brokerConnection()
      try {
        const channel = await connection.createChannel()
        await channel.deleteQueue(hold).catch(() => {})
        await channel.deleteExchange(hold).catch(() => {})
        await channel.deleteExchange(control).catch(() => {})
      } finally {
        await connection.close().catch(() => {})
      }
    },
  }
}
