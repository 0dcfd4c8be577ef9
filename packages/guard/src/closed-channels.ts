// Types only: the guard uses the application's own amqplib through the connection it is given.
import type { Channel } from 'amqplib'

/**
 * The application's channels the guard saw close. amqplib has no "is closed" flag, and acking (or consuming) on a
 * closed channel throws: the guard checks here first.
 */
export class ClosedChannels {
  private readonly watched = new WeakSet<Channel>()
  private readonly closed = new WeakSet<Channel>()

  /** Starts watching a channel (once per channel, however often it is passed). */
  watch(channel: Channel): void {
    if (this.watched.has(channel)) return
    this.watched.add(channel)
    channel.once('close', () => this.closed.add(channel))
  }

  has(channel: Channel): boolean {
    return this.closed.has(channel)
  }
}
