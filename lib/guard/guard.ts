import { randomBytes, randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
// Types only: the guard uses the application's own amqplib through the connection it is given.
import type { Channel, ConfirmChannel, ConsumeMessage, Options } from 'amqplib'
import {
  CONTROL_EXCHANGE,
  HELD_ENTITY_HEADER,
  HELD_FROM_HEADER,
  HELD_ID_HEADER,
  HOLD_EXCHANGE,
  RELEASE_HEADER,
  REPLAY_ID_HEADER,
  parsePauseList,
  type GuardPause,
  type PausePollQuery,
} from './protocol'
import { PauseRegistry } from './registry'
import { GUARD_VERSION } from './version'

/** What the guard needs from an amqplib connection (a ChannelModel, or amqplib 2.x's recovering one). */
export type GuardConnection = {
  createChannel(): Promise<Channel>
  createConfirmChannel(): Promise<ConfirmChannel>
}

export type HoldEvent = { queue: string; pauseId: string; entityKey: string | null; heldId: string }

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
  fetch?: typeof fetch
}

/** A consume callback, as amqplib calls it (null: the broker cancelled the consumer). */
export type MessageHandler = (message: ConsumeMessage | null) => unknown

export type GuardedConsumer = {
  /** The current consumer tag; null while the whole queue is paused (or after cancel). */
  readonly consumerTag: string | null
  /** True while a whole-queue pause keeps this consumer cancelled. */
  readonly paused: boolean
  /** Stops consuming for good (does not close the channel). */
  cancel(): Promise<void>
}

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
  /** Stops the guard: cancels the consumers it started, finishes holds in progress, closes its channels. */
  close(): Promise<void>
}

type HoldJob = { channel: Channel; message: ConsumeMessage; pauseId: string; entityKey: string | null; heldId: string }

const MAX_RETRY_DELAY_MS = 30_000
/** Events published together (a replay pausing many entities) arrive within a few milliseconds: one read for all. */
const EVENT_COALESCE_MS = 20
/** A refused token is written to the console at most this often (onError hears every time). */
const SHOUT_INTERVAL_MS = 60_000

/** Lazarus answered 401 or 403: only a person can fix it (the `token` option), so it is reported apart. */
class RefusedError extends Error {}

/**
 * The `token` option, trimmed (a secret read from a file often ends in a newline); null when empty. A token no HTTP
 * header can carry is a configuration error that can never work: it is refused here, without echoing it, rather than
 * on every poll by fetch, whose message would quote the secret into the application's log.
 */
function guardToken(value: string | undefined): string | null {
  const token = value?.trim() ?? ''
  if (token === '') return null
  if (!/^[\x21-\x7e]+$/.test(token)) throw new TypeError('lazarus guard: the `token` option holds characters an HTTP header cannot carry (spaces, line breaks or non-ASCII); copy the token again')
  return token
}

/** Unique per guard: which process on which host polls (hostnames are cut, the random part tells two guards apart). */
function newInstanceId(): string {
  let host = 'unknown-host'
  try {
    host = hostname().replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100) || host
  } catch {
    // Some sandboxes refuse os.hostname(); the pid and random part still tell guards apart.
  }
  return `${host}-${process.pid}-${randomBytes(4).toString('hex')}`
}

/**
 * Creates the pause guard for one queue (docs/ARCHITECTURE.md#pause-hold-release). It learns the pauses from GET
 * {lazarusUrl}/api/pauses only, re-read on a timer and whenever an event arrives on the lazarus.control exchange (an
 * event's content is never trusted: anyone allowed to publish there could have forged it). For a message of a paused
 * entity it republishes the message unchanged, plus `x-lazarus-held-*` headers, to the lazarus.hold exchange on a
 * confirm channel, then acks the original: the message waits in Lazarus, never at the head of the queue. Messages
 * Lazarus sends back (`x-lazarus-release`, `x-lazarus-replay-id`) always pass.
 */
export function createGuard(options: GuardOptions): Guard {
  const { connection, queue } = options
  const vhost = options.vhost ?? '/'
  const baseUrl = options.lazarusUrl.replace(/\/+$/, '')
  const pollIntervalMs = options.pollIntervalMs ?? 30_000
  const minRefreshIntervalMs = options.minRefreshIntervalMs ?? 1_000
  const startTimeoutMs = options.startTimeoutMs ?? 10_000
  const retryDelayMs = options.retryDelayMs ?? 1_000
  const confirmTimeoutMs = options.confirmTimeoutMs ?? 10_000
  const doFetch = options.fetch ?? fetch
  const controlExchange = options.controlExchange ?? CONTROL_EXCHANGE
  const holdExchange = options.holdExchange ?? HOLD_EXCHANGE
  const report = (error: unknown) => {
    const err = error instanceof Error ? error : new Error(String(error))
    if (options.onError) options.onError(err)
    else console.warn(`[lazarus-guard] ${queue}: ${err.message}`)
  }
  const token = guardToken(options.token)
  const instanceId = newInstanceId()
  const pollQuery: PausePollQuery = { queue, vhost, instance: instanceId, guardVersion: GUARD_VERSION }
  const pausesUrl = `${baseUrl}/api/pauses?${new URLSearchParams(pollQuery)}`
  const requestHeaders: Record<string, string> = { accept: 'application/json' }
  for (const [name, value] of Object.entries(options.requestHeaders ?? {})) {
    // Two Authorization headers would be merged into one invalid value; the token is the one Lazarus checks.
    if (token !== null && name.toLowerCase() === 'authorization') continue
    requestHeaders[name] = value
  }
  if (token !== null) requestHeaders.authorization = `Bearer ${token}`

  const registry = new PauseRegistry(vhost, queue)
  /** Consumers started by consume(): re-synced on every registry change, stopped by close(). */
  const consumers = new Set<{ sync(): Promise<void>; stop(): Promise<void> }>()
  const closedChannels = new WeakSet<Channel>()
  const watchedChannels = new WeakSet<Channel>()
  let closed = false

  // ── Pause list and control events ────────────────────────────────────────────────────────────────────
  let loadedResolve: () => void = () => {}
  const loaded = new Promise<void>((resolve) => (loadedResolve = resolve))
  let refreshing: Promise<void> | null = null
  let refreshAgain = false
  let pollTimer: NodeJS.Timeout | null = null
  let eventTimer: NodeJS.Timeout | null = null
  let lastFetchAt = -Infinity
  let lastShoutAt = -Infinity
  let fetchFailures = 0

  const notify = () => {
    for (const consumer of consumers) void consumer.sync()
  }

  async function fetchList(): Promise<void> {
    lastFetchAt = Date.now()
    const response = await doFetch(pausesUrl, { headers: requestHeaders, signal: AbortSignal.timeout(5_000) })
    if (response.status === 401 || response.status === 403) {
      await response.body?.cancel().catch(() => {})
      throw new RefusedError(
        `Lazarus refused this guard's pause-list request (GET ${baseUrl}/api/pauses answered HTTP ${response.status}): ` +
          (token === null
            ? 'no token was sent; set the guard option `token` to a guard-scoped API token created in Lazarus for this queue. '
            : 'the token in the guard option `token` was not accepted (unknown, revoked, expired, or not a guard token for this queue); create a new one in Lazarus. ') +
          'Until Lazarus answers, this guard knows no pauses and holds nothing; it keeps asking.',
      )
    }
    if (!response.ok) throw new Error(`GET ${baseUrl}/api/pauses answered HTTP ${response.status}`)
    const list = parsePauseList(await response.json())
    if (!list) throw new Error(`GET ${baseUrl}/api/pauses answered something that is not a pause list`)
    registry.replace(list)
    loadedResolve()
    notify()
  }

  /**
   * A refused token does not heal by itself: onError hears it every time and the console at most once a minute, so
   * it stands out in the application's log without flooding it. The pauses read before are dropped: the guard can no
   * longer learn that they ended, and a pause never heard resumed would hold the entity (or stop the consumer) for
   * good. Holding nothing keeps every message flowing to the handler, where a failure still dead-letters it.
   */
  function refused(error: RefusedError) {
    report(error)
    if (Date.now() - lastShoutAt >= SHOUT_INTERVAL_MS) {
      lastShoutAt = Date.now()
      console.error(`[lazarus-guard] ${queue}: ${error.message}`)
    }
    if (registry.isLoaded || registry.list().length > 0) {
      registry.forget()
      notify()
    }
  }

  /** Single flight; a call while a fetch runs schedules one more, so the answer is never older than the call. */
  function refresh(): Promise<void> {
    if (closed) return Promise.resolve()
    if (refreshing) {
      refreshAgain = true
      return refreshing
    }
    refreshing = (async () => {
      do {
        refreshAgain = false
        try {
          await fetchList()
          fetchFailures = 0
        } catch (error) {
          fetchFailures++
          if (error instanceof RefusedError) refused(error)
          else report(new Error(`cannot read the pause list: ${(error as Error).message}`))
        }
      } while (refreshAgain && !closed)
    })().finally(() => {
      refreshing = null
    })
    return refreshing
  }

  function schedulePoll() {
    if (closed) return
    // Until a list was loaded, or after failures, retry sooner than the regular poll.
    const delay = !registry.isLoaded || fetchFailures > 0 ? Math.min(retryDelayMs * 2 ** Math.min(fetchFailures, 5), pollIntervalMs) : pollIntervalMs
    pollTimer = setTimeout(async () => {
      await refresh()
      schedulePoll()
    }, delay)
    pollTimer.unref?.()
  }

  /**
   * An event asks for a re-read soon: after a few milliseconds (events published together need one read), and never
   * sooner than minRefreshIntervalMs after the previous read, so a flood of events costs Lazarus one request per
   * interval and per guard. Events meanwhile join the read already scheduled, which starts after all of them arrived.
   */
  function refreshSoon() {
    if (closed || eventTimer) return
    const wait = Math.max(EVENT_COALESCE_MS, lastFetchAt + minRefreshIntervalMs - Date.now())
    eventTimer = setTimeout(() => {
      eventTimer = null
      void refresh()
    }, wait)
    eventTimer.unref?.()
  }

  let controlChannel: Channel | null = null
  let controlRetry = retryDelayMs

  function onControl(message: ConsumeMessage | null) {
    if (message === null) {
      // Our queue was deleted under us: subscribe again.
      controlChannel?.close().catch(() => {})
      return
    }
    // The content is not read, let alone applied: whoever may publish to the exchange could have written it. Malformed
    // or forged, an event costs one read of the list, which is what decides.
    refreshSoon()
  }

  async function subscribe(): Promise<void> {
    if (closed) return
    let channel: Channel | null = null
    try {
      channel = await connection.createChannel()
      const ch = channel
      ch.on('error', (error: Error) => report(new Error(`control channel: ${error.message}`)))
      ch.on('close', () => {
        if (controlChannel === ch) controlChannel = null
        if (closed) return
        const delay = controlRetry
        controlRetry = Math.min(controlRetry * 2, MAX_RETRY_DELAY_MS)
        setTimeout(() => void subscribe(), delay).unref?.()
      })
      // Checked, not declared: Lazarus declares it at start-up, so the application's RabbitMQ user needs no configure
      // permission on it (with one, it could delete the exchange). Until it exists this fails and is retried.
      await ch.checkExchange(controlExchange)
      // An event only means "read the list again": a short queue is enough, and a flood cannot pile up in the broker.
      const { queue: eventsQueue } = await ch.assertQueue('', {
        exclusive: true, autoDelete: true, durable: false, arguments: { 'x-max-length': 10, 'x-overflow': 'drop-head' },
      })
      await ch.bindQueue(eventsQueue, controlExchange, '#')
      await ch.consume(eventsQueue, onControl, { noAck: true })
      controlChannel = ch
      controlRetry = retryDelayMs
      if (closed) await ch.close().catch(() => {})
      // Events published while we were not subscribed are lost: read the list again.
      else void refresh()
    } catch (error) {
      report(new Error(`cannot subscribe to ${controlExchange}: ${(error as Error).message}`))
      // A channel that failed mid-setup retries from its close listener; one that never opened retries here.
      if (!channel && !closed) {
        const delay = controlRetry
        controlRetry = Math.min(controlRetry * 2, MAX_RETRY_DELAY_MS)
        setTimeout(() => void subscribe(), delay).unref?.()
      } else if (channel) await channel.close().catch(() => {})
    }
  }

  void subscribe()
  void refresh().then(schedulePoll)

  let readyPromise: Promise<void> | null = null
  function ready(): Promise<void> {
    readyPromise ??= (async () => {
      if (!Number.isFinite(startTimeoutMs)) return loaded
      let timer: NodeJS.Timeout | undefined
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), startTimeoutMs)))
      const outcome = await Promise.race([loaded.then(() => 'loaded' as const), timedOut])
      clearTimeout(timer)
      // Without a list the guard holds nothing: the application consumes as it did before it had a guard, so no message
      // is held where nobody releases it, or dropped; the risk is ordering (a paused entity's message goes through).
      // Waiting instead would stop the application, and grow its queue, for as long as Lazarus is unreachable or
      // refuses the token. `startTimeoutMs: Infinity` chooses waiting.
      if (outcome === 'timeout') report(new Error(`no pause list from ${baseUrl} after ${startTimeoutMs} ms; consuming without pauses (holding nothing) until it answers`))
    })()
    return readyPromise
  }

  // ── Holding ──────────────────────────────────────────────────────────────────────────────────────────
  const holds: HoldJob[] = []
  let pumping: Promise<void> | null = null
  let holdChannel: ConfirmChannel | null = null
  let openingHoldChannel: Promise<ConfirmChannel> | null = null
  const returned = new Set<string>()

  function watch(channel: Channel) {
    if (watchedChannels.has(channel)) return
    watchedChannels.add(channel)
    channel.once('close', () => closedChannels.add(channel))
  }

  function openHoldChannel(): Promise<ConfirmChannel> {
    if (holdChannel) return Promise.resolve(holdChannel)
    openingHoldChannel ??= (async () => {
      try {
        const channel = await connection.createConfirmChannel()
        channel.on('error', (error: Error) => report(new Error(`hold channel: ${error.message}`)))
        channel.on('close', () => {
          if (holdChannel === channel) holdChannel = null
        })
        // Unroutable (no lazarus.hold queue bound): the hold failed and the original must not be acked.
        channel.on('return', (message: ConsumeMessage) => {
          const id = message.properties.headers?.[HELD_ID_HEADER]
          if (typeof id === 'string') returned.add(id)
        })
        holdChannel = channel
        return channel
      } finally {
        openingHoldChannel = null
      }
    })()
    return openingHoldChannel
  }

  /** Publishes one held copy and waits for its confirm; true only for an ack without a return. */
  async function publishHold(job: HoldJob): Promise<boolean> {
    const channel = await openHoldChannel()
    // Broker-checked fields cannot be copied: a user id that is not the guard's own would close the channel,
    // and an expiration could let the copy expire in lazarus.hold. A release publishes neither anyway.
    const { headers, expiration: _expiration, userId: _userId, ...properties } = job.message.properties
    const publishOptions: Options.Publish = { mandatory: true }
    for (const [key, value] of Object.entries(properties)) if (value !== undefined && value !== null && key !== 'clusterId') (publishOptions as Record<string, unknown>)[key] = value
    publishOptions.headers = {
      ...(headers ?? {}),
      [HELD_FROM_HEADER]: queue,
      [HELD_ID_HEADER]: job.heldId,
      ...(job.entityKey === null ? {} : { [HELD_ENTITY_HEADER]: job.entityKey }),
    }
    const confirmed = await new Promise<boolean>((resolve) => {
      let settled = false
      const finish = (ok: boolean) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        channel.off('close', onClose)
        resolve(ok)
      }
      const onClose = () => finish(false)
      const timer = setTimeout(() => {
        report(new Error(`no confirm for a held message after ${confirmTimeoutMs} ms; trying again`))
        finish(false)
      }, confirmTimeoutMs)
      channel.once('close', onClose)
      try {
        channel.publish(holdExchange, '', job.message.content, publishOptions, (error) => finish(!error))
      } catch (error) {
        report(new Error(`cannot publish a held message: ${(error as Error).message}`))
        finish(false)
      }
    })
    // The broker sends basic.return before the ack of the same message.
    const wasReturned = returned.delete(job.heldId)
    if (wasReturned) report(new Error(`${holdExchange} routed a held message nowhere (is the ${holdExchange} queue bound?); trying again`))
    return confirmed && !wasReturned
  }

  /**
   * Holds are published one at a time, in delivery order: a retry never lets a later message of the same
   * entity overtake an earlier one in lazarus.hold.
   */
  function pump(): Promise<void> {
    pumping ??= (async () => {
      let delay = retryDelayMs
      while (holds.length > 0) {
        const job = holds[0]
        if (closedChannels.has(job.channel)) {
          // The delivery went back to the queue with its channel; it will be held again when redelivered.
          holds.shift()
          continue
        }
        let ok = false
        try {
          ok = await publishHold(job)
        } catch (error) {
          report(new Error(`cannot open a channel to hold messages: ${(error as Error).message}`))
        }
        if (ok) {
          holds.shift()
          delay = retryDelayMs
          try {
            job.channel.ack(job.message)
            options.onHold?.({ queue, pauseId: job.pauseId, entityKey: job.entityKey, heldId: job.heldId })
          } catch (error) {
            // Channel closed between hold and ack: the original is redelivered and held again (a duplicate hold).
            report(new Error(`held a message but could not ack the original: ${(error as Error).message}`))
          }
        } else {
          if (closed && holds.length > 0 && delay > retryDelayMs * 4) break
          await sleep(delay)
          delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS)
        }
      }
    })().finally(() => {
      pumping = null
      if (holds.length > 0 && !closed) void pump()
    })
    return pumping
  }

  function wrap(channel: Channel, handler: MessageHandler): (message: ConsumeMessage | null) => void {
    watch(channel)
    return (message) => {
      if (message === null || closed) return void handler(message)
      const headers = message.properties.headers
      if (headers && (headers[RELEASE_HEADER] !== undefined || headers[REPLAY_ID_HEADER] !== undefined)) return void handler(message)
      const match = registry.match(message)
      if (!match) return void handler(message)
      holds.push({ channel, message, pauseId: match.pause.id, entityKey: match.entityKey, heldId: randomUUID() })
      void pump()
    }
  }

  // ── Guarded consumers ────────────────────────────────────────────────────────────────────────────────
  async function consume(channel: Channel, handler: MessageHandler, consumeOptions: Options.Consume = {}): Promise<GuardedConsumer> {
    await ready()
    const onMessage = wrap(channel, handler)
    let tag: string | null = null
    let stopped = false
    let chain: Promise<void> = Promise.resolve()
    const controller = { sync, stop: () => cancel() }

    const start = async () => {
      const { consumerTag } = await channel.consume(
        queue,
        (message) => {
          if (message === null) {
            // Cancelled by the broker (queue deleted): the application decides what to do, as without a guard.
            stopped = true
            tag = null
            consumers.delete(controller)
          }
          onMessage(message)
        },
        consumeOptions,
      )
      tag = consumerTag
    }

    const step = async () => {
      const paused = registry.wholeQueuePause() !== null
      if ((stopped || paused) && tag) {
        const current = tag
        tag = null
        // Cancelling neither requeues nor drops what was delivered; those messages are held by the callback.
        await channel.cancel(current)
      } else if (!stopped && !paused && !tag && !closedChannels.has(channel)) {
        await start()
      }
    }

    function sync(): Promise<void> {
      chain = chain.then(step).catch((error) => report(new Error(`cannot ${tag ? 'cancel' : 'resume'} the consumer of ${queue}: ${(error as Error).message}`)))
      return chain
    }

    async function cancel(): Promise<void> {
      stopped = true
      consumers.delete(controller)
      await sync()
    }

    channel.once('close', () => {
      stopped = true
      tag = null
      consumers.delete(controller)
    })
    // The first consume fails loudly (queue missing, access refused), as channel.consume would.
    if (registry.wholeQueuePause() === null) await start()
    consumers.add(controller)
    // A pause may have arrived while the first consume was in flight.
    void sync()

    return {
      get consumerTag() {
        return tag
      },
      get paused() {
        return !stopped && registry.wholeQueuePause() !== null
      },
      cancel,
    }
  }

  async function close(): Promise<void> {
    if (closed) return
    closed = true
    if (pollTimer) clearTimeout(pollTimer)
    if (eventTimer) clearTimeout(eventTimer)
    // Stop the consumers this guard started, then let holds in progress finish.
    await Promise.all([...consumers].map((consumer) => consumer.stop()))
    await Promise.race([pumping ?? Promise.resolve(), sleep(confirmTimeoutMs)])
    await Promise.all([controlChannel?.close().catch(() => {}), holdChannel?.close().catch(() => {})])
    loadedResolve()
  }

  return {
    queue,
    instanceId,
    ready,
    consume,
    wrap,
    pauses: () => registry.list(),
    refresh,
    close,
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
