import { randomUUID } from 'node:crypto'
// Types only: the guard uses the application's own amqplib through the connection it is given.
import type { Channel, ConfirmChannel, ConsumeMessage, Options } from 'amqplib'
import { ClosedChannels } from './closed-channels'
import { subscribeToControlEvents } from './control-events'
import { startGuardedConsumer, type ConsumerControl, type GuardedConsumer } from './guarded-consumer'
import { holdPublisher } from './hold-publisher'
import { holdQueue, type HoldEvent } from './hold-queue'
import { pauseView } from './pause-view'
import { guardToken, newInstanceId, pollRequest } from './poll-request'
import { CONTROL_EXCHANGE, HOLD_EXCHANGE, RELEASE_HEADER, REPLAY_ID_HEADER, type GuardPause } from './protocol'
import { PauseRegistry } from './registry'
import { versionGuard, type GuardVersionOptions, type SupersededEvent } from './version-guard'

export type { GuardedConsumer } from './guarded-consumer'
export type { HoldEvent } from './hold-queue'
export type { GuardVersionOptions, SupersededEvent } from './version-guard'

/** What the guard needs from an amqplib connection (a ChannelModel, or amqplib 2.x's recovering one). */
export type GuardConnection = {
  createChannel(): Promise<Channel>
  createConfirmChannel(): Promise<ConfirmChannel>
}

export type GuardOptions = {
  /** The application's amqplib connection; the guard opens two small channels on it (control events, holds). */
  connection: GuardConnection
  /** The queue this guard protects: the one the application consumes and Lazarus pauses. */
  queue: string
  /** Where Lazarus serves its API, e.g. `http://lazarus:3000`. */
  lazarusUrl: string
  /**
   * A guard-scoped API token created in Lazarus for this queue, sent as `Authorization: Bearer <token>` with every
   * poll. Lazarus versions that require one answer 401 without it; the guard then says so loudly and holds nothing.
   */
  token?: string
  /** The connection's virtual host (pauses name one). Default `/`. */
  vhost?: string
  /** Lazarus' LAZARUS_CONTROL_EXCHANGE, if it was changed. Default `lazarus.control`. */
  controlExchange?: string
  /** Lazarus' LAZARUS_HOLD_QUEUE, if it was changed. Default `lazarus.hold`. */
  holdExchange?: string
  /** Extra headers for GET /api/pauses (a proxy's credentials, say). An `authorization` here gives way to `token`. */
  requestHeaders?: Record<string, string>
  /** How often the pause list is re-read in case an event was lost; each read is also the guard's heartbeat. Default 30 s. */
  pollIntervalMs?: number
  /**
   * The least time between two reads of the list that events ask for: a burst (or a flood) of events becomes at most
   * one request per interval, the last one after the last event. Default 1 s.
   */
  minRefreshIntervalMs?: number
  /**
   * How long `ready()` (and so `consume()`) waits for the first pause list. Past it the guard consumes without
   * pauses (it holds nothing), reports it, and keeps polling; `Infinity` waits for Lazarus however long it takes.
   * Default 10 s.
   */
  startTimeoutMs?: number
  /** First delay before retrying a failed fetch, channel or hold; doubles up to 30 s. Default 1 s. */
  retryDelayMs?: number
  /** Longest wait for the broker to confirm a held message before trying again. Default 10 s. */
  confirmTimeoutMs?: number
  /**
   * Problems the guard recovers from by itself (Lazarus unreachable, a channel closed) and Lazarus refusing its token
   * (each time). Default: console.warn. A refused token is also written with console.error, at most once a minute.
   */
  onError?: (error: Error) => void
  /** Called after a message was held (published to lazarus.hold, confirmed, and the original acked). */
  onHold?: (event: HoldEvent) => void
  /**
   * Old must not overwrite new (README, "Entity versions"): with a version rule, the guard remembers per entity the
   * highest version it let through, in a bounded window, and acks a replayed or released message with a lower version
   * without handing it to the handler, then reports it to Lazarus (POST /api/guard/superseded, with `token`).
   * Ordinary messages are never dropped.
   */
  versions?: GuardVersionOptions
  /** Called after a replayed or released message was dropped as superseded (acked, not handed to the handler). */
  onSuperseded?: (event: SupersededEvent) => void
  fetch?: typeof fetch
}

/** A consume callback, as amqplib calls it (null: the broker cancelled the consumer). */
export type MessageHandler = (message: ConsumeMessage | null) => unknown

export type Guard = {
  readonly queue: string
  /** This guard's id in Lazarus' heartbeats (`instance` of the poll): host name, process id and a random part. */
  readonly instanceId: string
  /** Resolves once the pause list is known (or after `startTimeoutMs`). `consume()` awaits it. */
  ready(): Promise<void>
  /**
   * `channel.consume(queue, handler, options)` with the guard in front: messages of paused entities are held
   * instead of reaching `handler`, and a whole-queue pause cancels the consumer until it is resumed. The handler
   * acks as usual; held messages are acked by the guard.
   */
  consume(channel: Channel, handler: MessageHandler, options?: Options.Consume): Promise<GuardedConsumer>
  /**
   * The guard as a plain consume callback, for code that calls `channel.consume` itself. It holds messages of
   * paused entities; under a whole-queue pause it holds every message (it cannot cancel a consumer it did not
   * start). `channel` is the one the callback consumes on (held messages are acked on it).
   */
  wrap(channel: Channel, handler: MessageHandler): (message: ConsumeMessage | null) => void
  /** The active pauses on this queue. */
  pauses(): GuardPause[]
  /** Re-reads the pause list now. */
  refresh(): Promise<void>
  /** How many control events this guard has received. Each asks for a re-read of the list; none is read. */
  controlEvents(): number
  /**
   * Resolves once every control event received so far has been followed: no re-read of the list is due or running.
   * The regular poll (`pollIntervalMs`) does not count. For tests and shutdown scripts that must know the guard acted
   * on what it heard, without waiting a guessed time: a burst of events is read once, after its last event
   * (`minRefreshIntervalMs`).
   */
  settled(): Promise<void>
  /** Stops the guard: cancels the consumers it started, finishes holds in progress, closes its channels. */
  close(): Promise<void>
}

/**
 * Creates the pause guard for one queue (docs/ARCHITECTURE.md#pause-hold-release). It learns the pauses from GET
 * {lazarusUrl}/api/pauses only, re-read on a timer and whenever an event arrives on the lazarus.control exchange (an
 * event's content is never trusted: anyone allowed to publish there could have forged it). For a message of a paused
 * entity it republishes the message unchanged, plus `x-lazarus-held-*` headers, to the lazarus.hold exchange on a
 * confirm channel, then acks the original: the message waits in Lazarus, never at the head of the queue. Messages
 * Lazarus sends back (`x-lazarus-release`, `x-lazarus-replay-id`) always pass.
 *
 * The parts: the pause view (pause-view.ts: the list, polled, with the poll as heartbeat, poll-request.ts), the
 * control events that trigger a re-read (control-events.ts), the holds (hold-queue.ts, in order, through
 * hold-publisher.ts), and the consumers that follow whole-queue pauses (guarded-consumer.ts).
 */
export function createGuard(options: GuardOptions): Guard {
  const { connection, queue } = options
  const vhost = options.vhost ?? '/'
  const baseUrl = options.lazarusUrl.replace(/\/+$/, '')
  const retryDelayMs = options.retryDelayMs ?? 1_000
  const confirmTimeoutMs = options.confirmTimeoutMs ?? 10_000
  const report = (error: unknown) => {
    const err = error instanceof Error ? error : new Error(String(error))
    if (options.onError) options.onError(err)
    else console.warn(`[lazarus-guard] ${queue}: ${err.message}`)
  }
  const token = guardToken(options.token)
  const instanceId = newInstanceId()
  let closed = false
  const isClosed = () => closed

  const registry = new PauseRegistry(vhost, queue)
  /** Consumers started by consume(): re-synced on every registry change, stopped by close(). */
  const consumers = new Set<ConsumerControl>()
  const closedChannels = new ClosedChannels()
  const pauses = pauseView({
    registry,
    queue,
    baseUrl,
    request: pollRequest({ baseUrl, queue, vhost, instanceId, token, requestHeaders: options.requestHeaders }),
    tokenSent: token !== null,
    fetch: options.fetch ?? fetch,
    pollIntervalMs: options.pollIntervalMs ?? 30_000,
    minRefreshIntervalMs: options.minRefreshIntervalMs ?? 1_000,
    startTimeoutMs: options.startTimeoutMs ?? 10_000,
    retryDelayMs,
    report,
    onChange: () => {
      for (const consumer of consumers) void consumer.sync()
    },
    isClosed,
  })
  let controlEventsReceived = 0
  const controlEvents = subscribeToControlEvents({
    connection,
    exchange: options.controlExchange ?? CONTROL_EXCHANGE,
    retryDelayMs,
    report,
    onEvent: () => {
      controlEventsReceived++
      pauses.refreshSoon()
    },
    onSubscribed: () => void pauses.refresh(),
    isClosed,
  })
  pauses.start()
  const publisher = holdPublisher({ connection, queue, exchange: options.holdExchange ?? HOLD_EXCHANGE, confirmTimeoutMs, report })
  const holds = holdQueue({ publisher, queue, retryDelayMs, closedChannels, report, onHold: options.onHold, isClosed })
  const versions = options.versions
    ? versionGuard({
        versions: options.versions, queue, vhost, baseUrl, instanceId, token, requestHeaders: options.requestHeaders, fetch: options.fetch ?? fetch,
        retryDelayMs, report, onSuperseded: options.onSuperseded,
      })
    : null
  /** What reaches the handler passes the version check first (which also remembers its version). */
  const deliver = (channel: Channel, handler: MessageHandler, message: ConsumeMessage) => {
    if (versions?.dropIfSuperseded(channel, message)) return
    handler(message)
  }

  function wrap(channel: Channel, handler: MessageHandler): (message: ConsumeMessage | null) => void {
    closedChannels.watch(channel)
    return (message) => {
      if (message === null || closed) return void handler(message)
      const headers = message.properties.headers
      if (headers && (headers[RELEASE_HEADER] !== undefined || headers[REPLAY_ID_HEADER] !== undefined)) return deliver(channel, handler, message)
      const match = registry.match(message)
      if (!match) return deliver(channel, handler, message)
      holds.add({ channel, message, pauseId: match.pause.id, entityKey: match.entityKey, heldId: randomUUID() })
    }
  }

  async function consume(channel: Channel, handler: MessageHandler, consumeOptions: Options.Consume = {}): Promise<GuardedConsumer> {
    await pauses.ready()
    // close() ends a ready() that waited without limit: a consumer started now would outlive its guard.
    if (closed) throw new Error(`the guard of ${queue} was closed before its consumer started`)
    const onMessage = wrap(channel, handler)
    return startGuardedConsumer({ channel, queue, onMessage, consumeOptions, registry, closedChannels, consumers, report })
  }

  async function close(): Promise<void> {
    if (closed) return
    closed = true
    // Stop the consumers this guard started, then let holds in progress finish.
    await Promise.all([...consumers].map((consumer) => consumer.stop()))
    await holds.settle(confirmTimeoutMs)
    await Promise.all([controlEvents.close(), publisher.close()])
    // Last: a ready() still waiting (startTimeoutMs: Infinity) returns only once the guard is closed. Timers that fire
    // until then find the guard closed and do nothing.
    pauses.stop()
  }

  return {
    queue,
    instanceId,
    ready: pauses.ready,
    consume,
    wrap,
    pauses: () => registry.list(),
    refresh: pauses.refresh,
    controlEvents: () => controlEventsReceived,
    settled: pauses.settled,
    close,
  }
}
