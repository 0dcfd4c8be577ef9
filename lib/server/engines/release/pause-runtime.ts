import 'server-only'
import { amqpVhost } from '@/lib/server/platform/broker/amqp-url'
import type { BrokerConnection } from '@/lib/server/platform/broker/connection'
import { queueExists, withChannel, type ChannelSource } from '@/lib/server/platform/broker/probe'
import type { Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { logger } from '@/lib/server/platform/log'
import { registerHoldSource } from './release-store'
import { releaseStragglers } from './release-stragglers'

/**
 * The release engine: the pause runtime below (hold source, pause topology, straggler sweep), the release steps of a
 * replay job (job-releases.ts, run by the replay executor), and its SQL (release-store.ts). Why a crash loses or
 * doubles nothing (docs/ARCHITECTURE.md#where-crash-safety-comes-from):
 *
 * 1. Registering the hold source and declaring the topology are idempotent: every process does both at every start,
 *    and the topology again after every reconnection, so a process that died half-way leaves nothing to repair.
 * 2. A straggler sweep takes held rows (held → replaying, FOR UPDATE SKIP LOCKED), creates their release job with its
 *    items and audits it, all in one transaction: dying before the commit leaves the rows held for the next sweep;
 *    after it, the job is there and the replay executor publishes it like any job. Two workers' sweeps skip each
 *    other's rows, so no row goes into two jobs.
 * 3. Publishing a release is replay publishing (lib/server/engines/replay-executor/executor.ts): a release that was
 *    not confirmed leaves its row held, with the reason, and the sweep tries it again after ten minutes; one that
 *    was published but not recorded goes out again with the same x-lazarus-replay-id, which a guard lets through.
 * 4. A replay job's releases are appended (rows taken held → replaying, pauses marked releasing) in one transaction,
 *    and appended again by whichever run takes the job over, picking up what was held meanwhile. Its pauses are
 *    resumed (with their audit entries) in one transaction after every item is out; the 'resume' events go after the
 *    commit, and a lost event costs a guard one poll. A message a guard held in that moment is a straggler (2).
 * 5. The database away: a sweep fails, is logged and runs again two seconds later. The broker away: the control
 *    connection reconnects and declares the topology again; guards keep polling the registry in the meantime.
 */

const log = logger('pauses')

export type PauseRuntime = {
  stop(): Promise<void>
  topologyReady: Promise<void>
  /**
   * Resolves once a straggler sweep that started after this call has ended (at once after stop()). What a sweep
   * should have released by then, it has: tests wait for sweeps, not for a guessed time.
   */
  swept(): Promise<void>
}

export type StartPauseRuntimeOptions = {
  /** The runtime uses db.background, the pool without statement timeouts. */
  db: Db
  /**
   * The process's control connection (the composition root's, where pause events go out): the runtime declares the
   * pause topology on it, again after every reconnection. Its owner closes it, not the runtime.
   */
  control: BrokerConnection
  config: Pick<Config, 'AMQP_URL' | 'LAZARUS_CONTROL_EXCHANGE' | 'LAZARUS_HOLD_QUEUE'>
  /** How often held messages whose pause ended are looked for. */
  sweepMs?: number
}

/**
 * Declares the pause topology: lazarus.control (topic) for pause/resume events, and lazarus.hold (fanout) bound to
 * the durable queue lazarus.hold. A new hold queue is single-active-consumer, so with several workers one drains it
 * at a time and held messages are stored in the order guards held them. An existing queue is left as it is (an
 * operator may have declared it as a quorum queue; re-declaring with other arguments would fail).
 */
export async function declarePauseTopology(connection: ChannelSource, names: { control: string; hold: string }): Promise<void> {
  await withChannel(connection, async (channel) => {
    await channel.assertExchange(names.control, 'topic', { durable: true })
    await channel.assertExchange(names.hold, 'fanout', { durable: true })
    if (!(await queueExists(connection, names.hold))) await channel.assertQueue(names.hold, { durable: true, arguments: { 'x-single-active-consumer': true } })
    await channel.bindQueue(names.hold, names.hold, '')
  })
}

/**
 * The pause side of the background workers: registers the hold source, declares the topology on the control connection
 * (again after every reconnection, so a deleted exchange or queue comes back; retried until the broker takes it), and
 * sweeps held messages whose pause ended into release jobs.
 */
export async function startPauseRuntime({ db, control, config, sweepMs = 2_000 }: StartPauseRuntimeOptions): Promise<PauseRuntime> {
  let stopped = false
  const timers = new Set<NodeJS.Timeout>()
  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer)
      fn()
    }, ms)
    timers.add(timer)
  }

  const names = { control: config.LAZARUS_CONTROL_EXCHANGE, hold: config.LAZARUS_HOLD_QUEUE }
  await registerHoldSource({ sql: db.background, vhost: amqpVhost(config.AMQP_URL), queue: names.hold })

  const topology = control.addSetup('pause topology', async (connection) => {
    await declarePauseTopology(connection, names)
    log.info('pause topology declared', names)
  })

  /** Whoever waits in swept() for the next sweep to start and end. */
  let waiting: Array<() => void> = []
  const sweep = async () => {
    if (stopped) return
    const waiters = waiting
    waiting = []
    try {
      const released = await releaseStragglers({ db })
      if (released) log.info('releasing messages held after their pause ended', { job: released.jobId, messages: released.released })
    } catch (error) {
      log.warn('straggler sweep failed', { error: (error as Error).message })
    }
    for (const resolve of waiters) resolve()
    if (!stopped) later(sweepMs, () => void sweep())
  }
  later(sweepMs, () => void sweep())

  return {
    topologyReady: topology.ready,
    swept: () => (stopped ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve))),
    async stop() {
      stopped = true
      for (const resolve of waiting.splice(0)) resolve()
      topology.remove()
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
    },
  }
}
