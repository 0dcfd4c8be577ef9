import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { startPauseRuntime, type PauseRuntime } from '@/lib/server/engines/release/pause-runtime'
import { getConfig } from '@/lib/server/platform/config'
import { AMQP_URL, brokerConnection, uniqueName } from './broker'
import type { RouteModule } from './call-route'
import { drainQueues } from './drainer'
import { serveRoutes } from './route-server'
import { createTestDb, type TestDb } from './test-db'
import { closeComposition, composition } from '@/lib/server/platform/process/composition'

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
      const runtime = await startPauseRuntime({ db, control: composition().brokers.control, config: this.config, sweepMs: 300 })
      await runtime.topologyReady
      const app = await brokerConnection()
      const setup = await app.createChannel()
      for (const queue of queues) await setup.assertQueue(queue, { durable: false })
      await setup.close()
      return { db, runtime, app }
    },
    /**
     * Lazarus as applications' guards meet it: the testbed, a drainer on the source `dlq` (with `entityKey` as its
     * rule, which pauses of it copy) and on the hold queue, and `routes` behind a loopback server (serveRoutes).
     * `stop(queues)` undoes it all and deletes `queues` too.
     */
    async startLazarus({ dlq, entityKey, routes }: { dlq: string; entityKey: unknown; routes: Record<string, RouteModule> }) {
      const bed = await this.startTestbed([dlq])
      const { drainer, sourceIds } = await drainQueues(bed.db, [dlq], { entityKey })
      const server = await serveRoutes(routes)
      return { ...bed, drainer, server, sourceId: sourceIds[dlq], stop: (queues: string[]) => this.stopTestbed(bed, { stop: [() => drainer.stop(), () => server.close()], queues: [dlq, ...queues] }) }
    },
    /**
     * Undoes startTestbed and what a test started on it, whichever of them started: first `stop` in order (a drainer,
     * a loopback server), then the runtime; deletes `queues`, closes the app connection and the control publisher,
     * removes the file's topology and drops the database.
     */
    async stopTestbed(bed: Partial<PauseTestbed>, { stop = [], queues = [] }: { stop?: (() => Promise<unknown> | undefined)[]; queues?: string[] } = {}) {
      for (const step of stop) await step()
      await bed.runtime?.stop()
      if (bed.app) {
        const channel = await bed.app.createChannel()
        for (const queue of queues) await channel.deleteQueue(queue).catch(() => {})
        await bed.app.close().catch(() => {})
      }
      await closeComposition()
      await this.cleanup()
      await bed.db?.drop()
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
