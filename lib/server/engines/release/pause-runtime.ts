import 'server-only'
import { amqpVhost } from '@/lib/server/platform/broker/amqp-url'
import { queueExists, withChannel, type ChannelSource } from '@/lib/server/platform/broker/probe'
import type { Config } from '@/lib/server/platform/config'
import type { Sql } from '@/lib/server/platform/db/sql'
import { logger } from '@/lib/server/platform/log'
import { HOLD_QUEUE } from '@/lib/guard/protocol'
import { closeControlPublisher, controlConnection } from '@/lib/server/pauses/control-events'
import { releaseStragglers } from './release-stragglers'

const log = logger('pauses')

export type PauseRuntime = { stop(): Promise<void>; topologyReady: Promise<void> }

export type StartPauseRuntimeOptions = {
  sql: Sql
  config: Pick<Config, 'AMQP_URL' | 'LAZARUS_CONTROL_EXCHANGE' | 'LAZARUS_HOLD_QUEUE'>
  /** How often held messages whose pause ended are looked for. */
  sweepMs?: number
}

/** Registers lazarus.hold as a source of kind 'hold' (the drainer stores its deliveries with status 'held'). */
export async function registerHoldSource(sql: Sql, vhost: string, queue = HOLD_QUEUE): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO sources (vhost, queue, kind) VALUES ($1, $2, 'hold')
     ON CONFLICT (vhost, queue) DO UPDATE SET kind = 'hold' RETURNING id::text`,
    [vhost, queue],
  )
  return rows[0].id
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
export async function startPauseRuntime({ sql, config, sweepMs = 2_000 }: StartPauseRuntimeOptions): Promise<PauseRuntime> {
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
  await registerHoldSource(sql, amqpVhost(config.AMQP_URL), names.hold)

  const topology = controlConnection(config).addSetup('pause topology', async (connection) => {
    await declarePauseTopology(connection, names)
    log.info('pause topology declared', names)
  })

  const sweep = async () => {
    if (stopped) return
    try {
      const released = await releaseStragglers({ sql })
      if (released) log.info('releasing messages held after their pause ended', { job: released.jobId, messages: released.released })
    } catch (error) {
      log.warn('straggler sweep failed', { error: (error as Error).message })
    }
    if (!stopped) later(sweepMs, () => void sweep())
  }
  later(sweepMs, () => void sweep())

  return {
    topologyReady: topology.ready,
    async stop() {
      stopped = true
      topology.remove()
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
      await closeControlPublisher()
    },
  }
}
