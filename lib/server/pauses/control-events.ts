import 'server-only'
import { connect, type ChannelModel, type ConfirmChannel } from '@/lib/server/amqp/amqplib'
import { getConfig } from '@/lib/server/config'
import { outsideRequest } from '@/lib/server/http/request-context'
import { logger } from '@/lib/server/log'
import type { ControlEvent } from '@/lib/shared/schemas/pause'

const log = logger('pauses')
const CONFIRM_TIMEOUT_MS = 5_000

type Publisher = { connection: ChannelModel; channel: ConfirmChannel; exchange: string }
const globalForControl = globalThis as unknown as { lazarusControlPublisher?: Promise<Publisher> | null }

function openPublisher(): Promise<Publisher> {
  // Opened by whichever request publishes first, then shared: its connection's log lines belong to no request.
  globalForControl.lazarusControlPublisher ??= outsideRequest(async () => {
    const config = getConfig()
    const exchange = config.LAZARUS_CONTROL_EXCHANGE
    const connection = await connect(config.AMQP_URL, { clientProperties: { connection_name: 'lazarus-control' } })
    const reset = () => {
      globalForControl.lazarusControlPublisher = null
    }
    connection.on('error', (error: Error) => log.warn('control connection error', { error: error.message }))
    connection.on('close', reset)
    try {
      const channel = await connection.createConfirmChannel()
      channel.on('error', (error: Error) => log.warn('control channel error', { error: error.message }))
      channel.on('close', () => {
        reset()
        // The channel's error was logged; the connection goes with it and may be closing already.
        void connection.close().catch(() => {})
      })
      // Idempotent, and cheap once per channel: a missing exchange would close the channel on every publish.
      await channel.assertExchange(exchange, 'topic', { durable: true })
      return { connection, channel, exchange }
    } catch (error) {
      await connection.close().catch(() => {}) // the error thrown below is what counts
      throw error
    }
  }).catch((error) => {
    globalForControl.lazarusControlPublisher = null
    throw error
  })
  return globalForControl.lazarusControlPublisher
}

/**
 * Publishes pause/resume events on lazarus.control (LAZARUS_CONTROL_EXCHANGE; routing key = event type), in version
 * order, after the change committed. Best effort: a failure is logged, never thrown, because guards also re-read
 * GET /api/pauses (by version) and notice the gap.
 */
export async function publishControlEvents(events: ControlEvent[]): Promise<void> {
  if (events.length === 0) return
  const ordered = [...events].sort((a, b) => a.version - b.version)
  try {
    const { channel, exchange } = await openPublisher()
    for (const event of ordered) {
      channel.publish(exchange, event.type, Buffer.from(JSON.stringify(event)), {
        contentType: 'application/json',
        type: `lazarus.${event.type}`,
        timestamp: Math.floor(Date.now() / 1000),
      })
    }
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      channel.waitForConfirms(),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no confirm within ${CONFIRM_TIMEOUT_MS} ms`)), CONFIRM_TIMEOUT_MS))),
    ]).finally(() => clearTimeout(timer))
  } catch (error) {
    log.warn('cannot publish pause events; guards will catch up from GET /api/pauses', {
      error: (error as Error).message,
      versions: ordered.map((e) => e.version).join(','),
    })
  }
}

/** Closes the process's control-event connection (shutdown, tests). */
export async function closeControlPublisher(): Promise<void> {
  const publisher = globalForControl.lazarusControlPublisher
  globalForControl.lazarusControlPublisher = null
  // A publisher that never opened has nothing to close (its failure was logged by the publish that tried); a close
  // that fails at shutdown leaves nothing open.
  const opened = await publisher?.catch(() => null)
  await opened?.connection.close().catch(() => {})
}
