import { randomUUID } from 'node:crypto'
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
  parseControlEvent,
  parsePauseList,
  type GuardPause,
} from './protocol'
import { PauseRegistry } from './registry'

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
  /** The connection's virtual host (pauses name one). Default `/`. */
  vhost?: string
  /** Lazarus' LAZARUS_CONTROL_EXCHANGE, if it was changed. Default `lazarus.control`. */
  controlExchange?: string
  /** Lazarus' LAZARUS_HOLD_QUEUE, if it was changed. Default `lazarus.hold`. */
  holdExchange?: string
  /** Extra headers for GET /api/pauses (a proxy's credentials, say). */
  requestHeaders?: Record<string, string>
  /** How often the pause list is re-read in case an event was lost. Default 30 s. */
  pollIntervalMs?: number
  /**
   * How long `ready()` (and so `consume()`) waits for the first pause list. Past it the guard proceeds with
   * what the control events say and keeps retrying; `Infinity` waits for Lazarus however long it takes.
   * Default 10 s.
   */
  startTimeoutMs?: number
  /** First delay before retrying a failed fetch, channel or hold; doubles up to 30 s. Default 1 s. */
  retryDelayMs?: number
  /** Longest wait for the broker to confirm a held message before trying again. Default 10 s. */
  confirmTimeoutMs?: number
  /** Problems the guard recovers from by itself (Lazarus unreachable, a channel closed). Default: console.warn. */
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

/**
 * Creates the pause guard for one queue (product.md §7). It learns the pauses from GET {lazarusUrl}/api/pauses
 * and from events on the lazarus.control exchange, and for a message of a paused entity it republishes the
 * message unchanged, plus `x-lazarus-held-*` headers, to the lazarus.hold exchange on a confirm channel, then
 * acks the original: the message waits in Lazarus, never at the head of the queue. Messages Lazarus sends
 * back (`x-lazarus-release`, `x-lazarus-replay-id`) always pass.
 */
export function createGuard(options: GuardOptions): Guard {
  const { connection, queue } = options
  const vhost = options.vhost ?? '/'
  const baseUrl = options.lazarusUrl.replace(/\/+$/, '')
  const pollIntervalMs = options.pollIntervalMs ?? 30_000
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
  let fetchFailures = 0

  const notify = () => {
    for (const consumer of consumers) void consumer.sync()
  }

  async function fetchList(): Promise<void> {
    const response = await doFetch(`${baseUrl}/api/pauses`, {
      headers: { accept: 'application/json', ...options.requestHeaders },
      signal: AbortSignal.timeout(5_000),
    })
    if (!response.ok) throw new Error(`GET ${baseUrl}/api/pauses answered HTTP ${response.status}`)
    const list = parsePauseList(await response.json())
    if (!list) throw new Error(`GET ${baseUrl}/api/pauses answered something that is not a pause list`)
    if (registry.replace(list)) {
      loadedResolve()
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
          report(new Error(`cannot read the pause list: ${(error as Error).message}`))
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

  let controlChannel: Channel | null = null
  let controlRetry = retryDelayMs

  function onControl(message: ConsumeMessage | null) {
    if (message === null) {
      // Our queue was deleted under us: subscribe again.
      controlChannel?.close().catch(() => {})
      return
    }
    let event
    try {
      event = parseControlEvent(JSON.parse(message.content.toString('utf8')))
    } catch {
      event = null
    }
    if (!event) return report(new Error('ignored a malformed event on lazarus.control'))
    const outcome = registry.apply(event)
    if (outcome !== 'stale') notify()
    if (outcome === 'gap') void refresh()
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
      await ch.assertExchange(controlExchange, 'topic', { durable: true })
      const { queue: eventsQueue } = await ch.assertQueue('', { exclusive: true, autoDelete: true, durable: false })
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
      if (outcome === 'timeout') report(new Error(`no pause list from ${baseUrl} after ${startTimeoutMs} ms; continuing with control events only until it answers`))
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
    // Stop the consumers this guard started, then let holds in progress finish.
    await Promise.all([...consumers].map((consumer) => consumer.stop()))
    await Promise.race([pumping ?? Promise.resolve(), sleep(confirmTimeoutMs)])
    await Promise.all([controlChannel?.close().catch(() => {}), holdChannel?.close().catch(() => {})])
    loadedResolve()
  }

  return {
    queue,
    ready,
    consume,
    wrap,
    pauses: () => registry.list(),
    refresh,
    close,
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
