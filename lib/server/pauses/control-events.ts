import 'server-only'
import type { ExchangePublisher } from '@/lib/server/platform/broker/exchange-publisher'
import { logger } from '@/lib/server/platform/log'
import type { ControlEvent } from '@/lib/shared/schemas/pause'

const log = logger('pauses')

export type PublishControlEventsOptions = {
  /** The publisher of lazarus.control (LAZARUS_CONTROL_EXCHANGE): the composition root's, on its control connection. */
  control: ExchangePublisher
  events: ControlEvent[]
}

/**
 * Publishes pause/resume events on lazarus.control (routing key = event type), in version order, after the change
 * committed. Best effort: a failure is logged, never thrown, because guards also re-read GET /api/pauses (by version)
 * and notice the gap.
 */
export async function publishControlEvents({ control, events }: PublishControlEventsOptions): Promise<void> {
  if (events.length === 0) return
  const ordered = [...events].sort((a, b) => a.version - b.version)
  try {
    await control.publish(
      ordered.map((event) => ({
        routingKey: event.type,
        content: Buffer.from(JSON.stringify(event)),
        options: { contentType: 'application/json', type: `lazarus.${event.type}`, timestamp: Math.floor(Date.now() / 1000) },
      })),
    )
  } catch (error) {
    log.warn('cannot publish pause events; guards will catch up from GET /api/pauses', {
      error: (error as Error).message,
      versions: ordered.map((e) => e.version).join(','),
    })
  }
}
