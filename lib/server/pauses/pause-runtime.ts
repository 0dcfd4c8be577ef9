import 'server-only'
import { vhostOf } from '@/lib/server/amqp/amqp-url'
import { connect } from '@/lib/server/amqp/amqplib'
import type { Config } from '@/lib/server/config'
import type { Sql } from '@/lib/server/db/sql'
import { logger } from '@/lib/server/log'
import { HOLD_QUEUE } from '@/lib/guard/protocol'
import { closeControlPublisher } from './control-events'
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
export async function declarePauseTopology(amqpUrl: string, names: { control: string; hold: string }): Promise<void> {
  const connection = await connect(amqpUrl, { clientProperties: { connection_name: 'lazarus-topology' } })
  connection.on('error', () => {})
  try {
    const channel = await connection.createChannel()
    await channel.assertExchange(names.control, 'topic', { durable: true })
    await channel.assertExchange(names.hold, 'fanout', { durable: true })
    // A missing queue closes the channel it is checked on: probe on a throw-away one.
    const probe = await connection.createChannel()
    probe.on('error', () => {})
    const exists = await probe.checkQueue(names.hold).then(
      () => true,
      () => false,
    )
    if (exists) await probe.close().catch(() => {})
    else await channel.assertQueue(names.hold, { durable: true, arguments: { 'x-single-active-consumer': true } })
    await channel.bindQueue(names.hold, names.hold, '')
    await channel.close()
  } finally {
    await connection.close().catch(() => {})
  }
}

/**
 * The pause side of the background workers: registers the hold source, declares the topology (retrying until the
 * broker answers), and sweeps held messages whose pause ended into release jobs.
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
  await registerHoldSource(sql, vhostOf(config.AMQP_URL), names.hold)

  const topologyReady = new Promise<void>((resolve) => {
    let delay = 500
    const attempt = async () => {
      if (stopped) return resolve()
      try {
        await declarePauseTopology(config.AMQP_URL, names)
        log.info('pause topology declared', names)
        resolve()
      } catch (error) {
        log.warn('cannot declare the pause topology yet; retrying', { error: (error as Error).message, retryInMs: delay })
        later(delay, () => void attempt())
        delay = Math.min(delay * 2, 10_000)
      }
    }
    void attempt()
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
    topologyReady,
    async stop() {
      stopped = true
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
      await closeControlPublisher()
    },
  }
}
