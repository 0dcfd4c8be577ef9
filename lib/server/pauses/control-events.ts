import 'server-only'
import type { ConfirmChannel } from '@/lib/server/platform/broker/amqplib'
import { BrokerConnection } from '@/lib/server/platform/broker/connection'
import { getConfig, type Config } from '@/lib/server/platform/config'
import { outsideRequest } from '@/lib/server/platform/request-context'
import { logger } from '@/lib/server/platform/log'
import type { ControlEvent } from '@/lib/shared/schemas/pause'

const log = logger('pauses')
const CONFIRM_TIMEOUT_MS = 5_000

type Control = { broker: BrokerConnection; exchange: string; channel: Promise<ConfirmChannel> | null }
const globalForControl = globalThis as unknown as { lazarusControl?: Control | null }

type ControlConfig = Pick<Config, 'AMQP_URL' | 'LAZARUS_CONTROL_EXCHANGE'>

function control(config: ControlConfig = getConfig()): Control {
  if (!globalForControl.lazarusControl) {
    globalForControl.lazarusControl = {
      // Made by whichever caller comes first (often a request), then shared: its log lines belong to no request.
      broker: outsideRequest(() => new BrokerConnection({ url: config.AMQP_URL, name: 'lazarus-control' })),
      exchange: config.LAZARUS_CONTROL_EXCHANGE,
      channel: null,
    }
  }
  return globalForControl.lazarusControl
}

/**
 * The process's connection for the pause side, made with the first caller's configuration: control events go out on
 * it, and the pause runtime's setup hook declares the pause topology on it after every reconnection (pause-runtime.ts).
 */
export function controlConnection(config?: ControlConfig): BrokerConnection {
  return control(config).broker
}

function publisherChannel(target: Control): Promise<ConfirmChannel> {
  const opening = (target.channel ??= (async () => {
    const channel = await target.broker.createConfirmChannel({ context: { exchange: target.exchange } })
    channel.on('close', () => {
      if (target.channel === opening) target.channel = null
    })
    // Idempotent, and cheap once per channel: a missing exchange (deleted while Lazarus stayed connected) would close
    // the channel on every publish.
    await channel.assertExchange(target.exchange, 'topic', { durable: true })
    return channel
  })())
  opening.catch(() => {
    if (target.channel === opening) target.channel = null
  })
  return opening
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
    const target = control()
    const channel = await publisherChannel(target)
    for (const event of ordered) {
      channel.publish(target.exchange, event.type, Buffer.from(JSON.stringify(event)), {
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

/** Closes the process's control connection (shutdown, tests). */
export async function closeControlPublisher(): Promise<void> {
  const target = globalForControl.lazarusControl
  globalForControl.lazarusControl = null
  await target?.broker.close()
}
