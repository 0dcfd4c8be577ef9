import 'server-only'
import type { ConfirmChannel, Options } from '@/lib/server/platform/broker/amqplib'
import type { BrokerConnection } from './connection'

export type OutgoingMessage = { routingKey: string; content: Buffer; options?: Options.Publish }

export type ExchangePublisherOptions = {
  /** The connection it opens its channel on; its owner (the composition root) closes it. */
  connection: BrokerConnection
  exchange: string
  /** Declared (durable) on every new channel. */
  type: 'topic' | 'fanout' | 'direct'
  /** How long publish() waits for the broker's confirms. Default: 5 s */
  confirmTimeoutMs?: number
}

/**
 * Publishes to one exchange with publisher confirms, on a confirm channel it keeps open on its connection: opened on
 * first use, and again after the broker or a lost connection closed it. Used for lazarus.control, where pause and
 * resume events go out after their change committed (lib/server/pauses/control-events.ts).
 */
export class ExchangePublisher {
  readonly exchange: string
  private readonly connection: BrokerConnection
  private readonly type: ExchangePublisherOptions['type']
  private readonly confirmTimeoutMs: number
  private channel: Promise<ConfirmChannel> | null = null

  constructor(options: ExchangePublisherOptions) {
    this.connection = options.connection
    this.exchange = options.exchange
    this.type = options.type
    this.confirmTimeoutMs = options.confirmTimeoutMs ?? 5_000
  }

  /** Publishes `messages` in order and resolves once the broker confirmed them all; throws if it did not in time. */
  async publish(messages: OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return
    const channel = await this.openChannel()
    for (const message of messages) channel.publish(this.exchange, message.routingKey, message.content, message.options)
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      channel.waitForConfirms(),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no confirm within ${this.confirmTimeoutMs} ms`)), this.confirmTimeoutMs))),
    ]).finally(() => clearTimeout(timer))
  }

  private openChannel(): Promise<ConfirmChannel> {
    const opening = (this.channel ??= (async () => {
      const channel = await this.connection.createConfirmChannel({ context: { exchange: this.exchange } })
      channel.on('close', () => {
        if (this.channel === opening) this.channel = null
      })
      // Idempotent, and cheap once per channel: a missing exchange (deleted while Lazarus stayed connected) would close
      // the channel on every publish.
      await channel.assertExchange(this.exchange, this.type, { durable: true })
      return channel
    })())
    opening.catch(() => {
      if (this.channel === opening) this.channel = null
    })
    return opening
  }
}
