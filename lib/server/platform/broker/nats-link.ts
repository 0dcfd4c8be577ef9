import 'server-only'
import type { NatsConnection } from '@nats-io/transport-node'
import { connectNats, type NatsSettings } from './nats'

/**
 * One NATS connection opened on first use and shared by whoever holds the link (the replay executor's job runs). The
 * client reconnects by itself; a connection that closed for good (or never opened) is opened again by the next caller.
 */
export class NatsLink {
  private opening: Promise<NatsConnection> | null = null

  constructor(
    private readonly settings: NatsSettings,
    private readonly name: string,
  ) {}

  async connection(): Promise<NatsConnection> {
    const current = this.opening ? await this.opening.catch(() => null) : null
    if (current && !current.isClosed()) return current
    const opening = connectNats(this.settings, this.name)
    this.opening = opening
    opening.catch(() => {
      if (this.opening === opening) this.opening = null
    })
    return opening
  }

  async close(): Promise<void> {
    const opening = this.opening
    this.opening = null
    const connection = await opening?.catch(() => null)
    // Draining would wait for replies nobody is owed any more: the runs have ended.
    await connection?.close().catch(() => {})
  }
}
