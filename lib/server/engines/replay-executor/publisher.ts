import 'server-only'
import { IllegalOperationError, type ConfirmChannel, type ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import type { BrokerConnection } from '@/lib/server/platform/broker/connection'
import { publishHeadersSlot } from '@/lib/server/platform/broker/typed-fields'
import type { Logger } from '@/lib/server/platform/log'
import type { ReplaySettings } from '@/lib/server/replay/replay-settings'
import { InFlightWindow } from './in-flight-window'
import { waitForPublishSlot } from './publish-slot'
import type { ItemRow, JobRow } from './job-store'
import type { LeaseKeeper } from './lease-keeper'
import type { OutcomeWriter } from './outcome-writer'
import { buildPublish, type PublishBuild } from '@/lib/server/replay/publish-message'
import type { RunControl } from './run-control'
import { TokenBucket, type RateMeter } from './token-bucket'

/** On shutdown, how long to wait for outstanding confirms before leaving them to the next worker. */
const STOP_GRACE_MS = 5_000

type InFlight = { seq: number; groupId: string; sourceId: string; channel: ConfirmChannel; at: number }

export type PublisherOptions = {
  job: JobRow
  settings: ReplaySettings
  broker: BrokerConnection
  control: RunControl
  lease: LeaseKeeper
  outcomes: OutcomeWriter
  meter: RateMeter
  log: Logger
}

/**
 * Publishes one job's items through its own ConfirmChannel (docs/ARCHITECTURE.md#publishing) and settles each with
 * the broker's answer (docs/ARCHITECTURE.md#outcomes):
 *
 * - every publish is `mandatory`; a basic.return is recorded under the message's x-lazarus-replay-id, and RabbitMQ
 *   sends it before the ack, so an ack without a return is `confirmed` (the message is replayed), an ack after a
 *   return `unroutable`; a nack, a closed channel or no confirm within LAZARUS_REPLAY_CONFIRM_TIMEOUT_MS is `failed`;
 * - unconfirmed publishes are capped by the in-flight window; publishing waits for `drain` when amqplib's buffer is
 *   full, while the connection is `blocked`, while the lease is not fresh, while the outcome writer is behind, and
 *   for the job's token bucket;
 * - an exchange is checked once per run on a throw-away channel: publishing to a missing one would close this one.
 *
 * While there is room, publishing is synchronous: a promise only when it has to wait.
 */
export class Publisher {
  private channel: ConfirmChannel | null = null
  private readonly unconfirmed = new Map<string, InFlight>()
  /** Channels that closed: amqplib fails their unconfirmed publishes with the same kind of error as a nack. */
  private readonly closedChannels = new WeakSet<ConfirmChannel>()
  private readonly returned = new Map<string, string>()
  private readonly exchanges = new Map<string, boolean>()
  private readonly bucket: TokenBucket
  private readonly window: InFlightWindow
  private readonly headersSlot = publishHeadersSlot()
  private drainWait = false
  private lastChannelError: string | null = null

  constructor(private readonly options: PublisherOptions) {
    this.bucket = new TokenBucket(options.job.rate_per_second)
    this.window = new InFlightWindow(options.settings.window)
  }

  /** Publishes a claimed chunk in seq order; returns early when publishing must stop (the rest stays in flight). */
  async publishChunk(chunk: ItemRow[]): Promise<void> {
    const { outcomes } = this.options
    for (const item of chunk) {
      const exchange = item.exchange ?? ''
      const routingKey = item.routing_key ?? (item.kind === 'release' ? (item.held_from ?? '') : '')
      if (item.row_status !== 'replaying') {
        outcomes.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: 'skipped', error: `not published: the message is ${item.row_status}, not replaying` })
        continue
      }
      const known = exchange === '' ? true : this.exchanges.get(exchange)
      if (!(known ?? (await this.exchangeExists(exchange)))) {
        outcomes.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: 'failed', error: `not published: exchange "${exchange}" does not exist` })
        continue
      }
      const build = this.build(item)
      if (!build.ok) {
        outcomes.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: 'skipped', error: build.message })
        continue
      }
      for (let attempt = 1; ; attempt++) {
        if (!this.readyToPublish() && !(await this.waitUntilReady())) return
        const sent = this.publishNow(item, exchange, routingKey, build)
        if (sent) break
        if (attempt === 3) {
          outcomes.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: 'failed', error: 'not published: the channel kept closing' })
          break
        }
      }
    }
  }

  /** Waits until every publish has its answer (or timed out); on shutdown for STOP_GRACE_MS at most. */
  async awaitConfirms(): Promise<void> {
    const { control } = this.options
    const deadline = Date.now() + STOP_GRACE_MS
    while (this.unconfirmed.size > 0 && !control.leaseLost && !(control.stopping && Date.now() > deadline)) await control.pause(100)
  }

  /** Called by the heartbeat: publishes unanswered for LAZARUS_REPLAY_CONFIRM_TIMEOUT_MS fail, and their channel is closed. */
  checkConfirmTimeout(): void {
    const { settings, broker, job, control, log } = this.options
    const oldest = this.unconfirmed.values().next().value as InFlight | undefined
    const timeout = settings.confirmTimeoutMs
    if (!oldest || Date.now() - oldest.at < timeout) return
    log.warn('replay confirm timeout; closing the channel', { job: job.id, unconfirmed: this.unconfirmed.size, blocked: broker.blocked })
    const channel = this.channel
    this.channel = null
    this.failUnconfirmed(null, `not confirmed: no answer from the broker within ${timeout} ms${broker.blocked ? ` (publishing blocked: ${broker.blocked})` : ''}`)
    void channel?.close().catch(() => {}) // given up on already (logged above); a failed close leaves nothing open
    control.wake()
  }

  async close(): Promise<void> {
    const channel = this.channel
    this.channel = null
    await channel?.close().catch(() => {}) // closed or closing already when the broker went away
  }

  private build(item: ItemRow): PublishBuild {
    const { job, settings } = this.options
    return buildPublish(
      {
        id: item.dead_letter_id, body: asBuffer(item.body), properties: JSON.parse(item.properties_json) ?? {}, headers: JSON.parse(item.headers_json) ?? {},
        lineageOriginId: item.lineage_origin_id, replayCount: item.replay_count,
      },
      item.kind === 'release'
        ? { kind: 'release', replayId: item.replay_id, pauseId: item.pause_id ?? `job-${job.id}` }
        : { kind: 'replay', replayId: item.replay_id, actor: job.created_by, pauseId: item.pause_id, revision: item.revision, newTrace: job.new_trace },
      { amqpUser: settings.amqpUser, maxBodyBytes: settings.maxBodyBytes },
    )
  }

  /** Everything a publish needs now: a channel, no block or drain, a fresh lease, room in the window and the writer, a rate token. */
  private readyToPublish(): boolean {
    const { control, broker, lease, outcomes } = this.options
    if (control.mustStopPublishing() || !this.channel || broker.blocked !== null || this.drainWait) return false
    if (!lease.fresh()) return false
    if (this.window.closed(this.unconfirmed.size) || outcomes.backlogFull()) return false
    return this.bucket.take() === 0
  }

  /** Waits until readyToPublish would hold (and has taken the token); false when publishing must stop. */
  private waitUntilReady(): Promise<boolean> {
    const { control, broker, lease, outcomes } = this.options
    return waitForPublishSlot({
      control, lease, outcomes, window: this.window, bucket: this.bucket, unconfirmed: () => this.unconfirmed.size,
      needsConnection: () => !this.channel, connect: () => this.openChannel(), heldBack: () => broker.blocked !== null || this.drainWait,
    })
  }

  /** Publishes one message; false when the channel closed before anything was written (publish it again). */
  private publishNow(item: ItemRow, exchange: string, routingKey: string, build: Extract<PublishBuild, { ok: true }>): boolean {
    const channel = this.channel!
    const replayId = item.replay_id
    this.unconfirmed.set(replayId, { seq: item.seq, groupId: item.group_id, sourceId: item.source_id, channel, at: Date.now() })
    build.options.headers = this.headersSlot.load(build.headers)
    try {
      if (!channel.publish(exchange, routingKey, build.content, build.options, (error) => this.onConfirm(replayId, error))) this.drainWait = true
    } catch (error) {
      this.unconfirmed.delete(replayId)
      if (error instanceof IllegalOperationError) {
        // The channel closed under us before anything was written.
        if (this.channel === channel) this.channel = null
        return false
      }
      const reason =
        error instanceof RangeError
          ? `cannot replay: header table too large for AMQP (${error.message})`
          : `cannot replay: ${(error as Error).message.slice(0, 300)}`
      this.options.outcomes.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: 'skipped', error: reason })
      return true
    }
    this.options.meter.add()
    return true
  }

  private onConfirm(replayId: string, error: Error | null): void {
    const pending = this.unconfirmed.get(replayId)
    if (!pending) return
    this.unconfirmed.delete(replayId)
    const returned = this.returned.get(replayId)
    this.returned.delete(replayId)
    const { outcomes } = this.options
    if (error) {
      const reason = this.closedChannels.has(pending.channel) ? this.channelClosedReason() : 'nacked by the broker'
      outcomes.settle({ seq: pending.seq, groupId: pending.groupId, sourceId: pending.sourceId, status: 'failed', error: reason, publishedAt: pending.at })
    } else if (returned !== undefined) {
      outcomes.settle({ seq: pending.seq, groupId: pending.groupId, sourceId: pending.sourceId, status: 'unroutable', error: returned, publishedAt: pending.at })
    } else {
      outcomes.settle({ seq: pending.seq, groupId: pending.groupId, sourceId: pending.sourceId, status: 'confirmed', error: null, publishedAt: pending.at })
    }
    this.options.control.wake()
  }

  private channelClosedReason(): string {
    return `not confirmed: channel closed${this.lastChannelError ? ` (${this.lastChannelError})` : ''}`
  }

  private async openChannel(): Promise<void> {
    const { broker, job, control } = this.options
    const channel = await control.retry('open a publishing channel', () => broker.createConfirmChannel({ context: { job: job.id } }))
    this.lastChannelError = null
    // Logged by the broker layer; kept for the reason of the publishes the close fails.
    channel.on('error', (error: Error) => (this.lastChannelError = error.message))
    // Ahead of amqplib's own listener, which fails the unconfirmed publishes as it runs.
    channel.prependListener('close', () => this.closedChannels.add(channel))
    channel.on('close', () => {
      if (this.channel === channel) this.channel = null
      // A 404 (exchange deleted) closes the channel: check exchanges again before publishing to them.
      this.exchanges.clear()
      this.drainWait = false
      this.failUnconfirmed(channel, this.channelClosedReason())
      control.wake()
    })
    channel.on('return', (message: ConsumeMessage) => {
      const id = message.properties.headers?.['x-lazarus-replay-id']
      if (typeof id === 'string') {
        const { replyCode, replyText, exchange, routingKey } = message.fields as unknown as { replyCode: number; replyText: string; exchange: string; routingKey: string }
        this.returned.set(id, `unroutable: ${replyCode} ${replyText} (exchange "${exchange}", routing key "${routingKey}")`)
      }
    })
    channel.on('drain', () => {
      this.drainWait = false
      control.wake()
    })
    this.channel = channel
  }

  /** Checked once per run on a throw-away channel: publishing to a missing exchange would close the job's channel. */
  private async exchangeExists(name: string): Promise<boolean> {
    if (name === '') return true
    const known = this.exchanges.get(name)
    if (known !== undefined) return known
    const exists = await this.options.control.retry(`check exchange "${name}"`, () => this.options.broker.exchangeExists(name))
    this.exchanges.set(name, exists)
    return exists
  }

  private failUnconfirmed(channel: ConfirmChannel | null, reason: string): void {
    for (const [replayId, pending] of this.unconfirmed) {
      if (channel !== null && pending.channel !== channel) continue
      this.unconfirmed.delete(replayId)
      this.returned.delete(replayId)
      this.options.outcomes.settle({ seq: pending.seq, groupId: pending.groupId, sourceId: pending.sourceId, status: 'failed', error: reason, publishedAt: pending.at })
    }
  }
}

/** node-pg gives bytea as a Buffer, PGlite as a Uint8Array; amqplib publishes Buffers only. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
