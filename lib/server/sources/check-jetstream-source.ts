import 'server-only'
import { JetStreamApiError, jetstreamManager } from '@nats-io/jetstream'
import { connectNats } from '@/lib/server/platform/broker/nats'
import type { Config } from '@/lib/server/platform/config'
import { AppError } from '@/lib/server/platform/errors/app-error'

/** The servers' addresses without the credentials a URL may carry (`nats://user:pass@host`): the text goes to a browser. */
export function natsServerNames(urls: readonly string[]): string {
  return urls
    .map((url) => {
      try {
        return new URL(url).host
      } catch {
        return '(a malformed URL)'
      }
    })
    .join(', ')
}

export type CheckJetStreamSourceOptions = { config: Config; stream: string; consumer: string | null }

/**
 * Asks the NATS server whether the stream (and the consumer, when one is named) exists before a source is made of
 * them: a typo would otherwise capture nothing, silently. Unreachable or unconfigured NATS is a 503/422 naming why.
 */
export async function assertJetStreamSourceExists({ config, stream, consumer }: CheckJetStreamSourceOptions): Promise<void> {
  if (!config.LAZARUS_NATS_URL) throw new AppError('unprocessable', 'LAZARUS_NATS_URL is not set: Lazarus has no NATS server to capture JetStream failures from (docs/jetstream.md#connecting)')
  let nc
  try {
    nc = await connectNats({ ...config, LAZARUS_NATS_URL: config.LAZARUS_NATS_URL }, 'lazarus-web')
  } catch (error) {
    throw new AppError('unavailable', `cannot reach NATS at ${natsServerNames(config.LAZARUS_NATS_URL)}: ${(error as Error).message}`)
  }
  try {
    const jsm = await jetstreamManager(nc)
    try {
      await jsm.streams.info(stream)
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === 10059) throw new AppError('unprocessable', `stream "${stream}" not found on the NATS server`)
      throw error
    }
    if (consumer !== null) {
      try {
        await jsm.consumers.info(stream, consumer)
      } catch (error) {
        if (error instanceof JetStreamApiError && error.code === 10014) throw new AppError('unprocessable', `consumer "${consumer}" of stream "${stream}" not found on the NATS server`)
        throw error
      }
    }
  } catch (error) {
    if (error instanceof AppError) throw error
    throw new AppError('unavailable', `cannot ask NATS about stream "${stream}": ${(error as Error).message}`)
  } finally {
    await nc.close().catch(() => undefined)
  }
}
