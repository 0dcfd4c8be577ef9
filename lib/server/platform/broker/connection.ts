import 'server-only'
import { EventEmitter } from 'node:events'
import { hostname } from 'node:os'
import { connect, type Channel, type ChannelModel, type ConfirmChannel, type RecoveringChannelModel } from '@/lib/server/platform/broker/amqplib'
import { logger } from '@/lib/server/platform/log'
import { outsideRequest } from '@/lib/server/platform/request-context'
import { classifyAmqpError, logAmqpError } from './amqp-errors'
import { Backoff, backoffDelay, RECONNECT_BACKOFF, type BackoffPolicy } from './backoff'
import { exchangeExists, queueExists, withChannel, type ChannelSource } from './probe'

const log = logger('broker')

/**
 * Every connection carries this client property beside its name: with several workers the management UI shows which
 * process holds which `lazarus-drainer`, and a test closes its own process's connections only.
 */
export const BROKER_PROCESS_TAG = `${hostname()}:${process.pid}`

/** How long a channel request waits for a connection that is being (re)established before it fails. */
const DEFAULT_WAIT_MS = 3_000

export type BrokerConnectionOptions = {
  url: string
  /** The connection's name in the management UI (client property `connection_name`), and in log lines. */
  name: string
  backoff?: BackoffPolicy
}

export type ChannelRequest = {
  /** How long to wait for a connection being (re)established. Default: 3 s */
  waitMs?: number
  /** Fields for the log line when the broker closes the channel (the queue, the job). */
  context?: Record<string, unknown>
}

/** idle: not started yet; reconnecting: lost (or never made) and retrying with backoff; closed: by its owner. */
export type BrokerConnectionState = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'closed'

export type BrokerConnectionStatus = { state: BrokerConnectionState; blocked: string | null; error: string | null }

/**
 * Declares what its user needs (exchanges, queues, bindings) on the connection it is handed, which it must leave as
 * it found it (close the channels it opens). Runs on every (re)connection before anyone gets a channel, so objects
 * deleted while Lazarus was disconnected, or since, exist again afterwards.
 */
export type SetupHook = (connection: ChannelModel) => Promise<void>

/** ready: the hook's first success (or its removal, or the connection's close); remove(): it runs no more. */
export type SetupRegistration = { ready: Promise<void>; remove(): void }

type BrokerEvents = {
  /** Connected, every setup hook run. */
  connect: []
  /** Lost; channels on it are closed and recovery is under way. */
  disconnect: [error: Error]
  /** The broker blocks publishing (a resource alarm), with its reason. */
  blocked: [reason: string]
  unblocked: []
}

type HookEntry = {
  name: string
  hook: SetupHook
  removed: boolean
  /** The connection it last ran (or is running) on. */
  ranOn: ChannelModel | null
  retry: NodeJS.Timeout | null
  markReady: () => void
}

/** Not connected within the wait: the reason is the last failure. Connection-level, so callers retry. */
export class BrokerUnavailableError extends Error {
  override name = 'BrokerUnavailableError'
}

/**
 * One named, self-recovering connection to RabbitMQ, built on amqplib's own recovery (`connect(url, { recovery })`):
 * amqplib reconnects with this module's backoff and jitter and runs the setup hooks on each new connection; this class
 * adds what Lazarus' users share: channels that fail fast while the broker is away, `blocked` tracking, per-user setup
 * hooks that one failure cannot stop the others', probes, and the log lines. Channels are plain amqplib channels:
 * consuming and publishing cost exactly what they cost without it.
 */
export class BrokerConnection {
  readonly name: string
  /** Why the broker blocks publishing on this connection (a resource alarm), while it does; null otherwise. */
  blocked: string | null = null
  private readonly url: string
  private readonly backoff: BackoffPolicy
  private readonly events = new EventEmitter()
  private readonly hooks = new Set<HookEntry>()
  private recovering: Promise<RecoveringChannelModel> | null = null
  private model: ChannelModel | null = null
  private state: BrokerConnectionState = 'idle'
  private error: string | null = null
  private connectedBefore = false

  constructor(options: BrokerConnectionOptions) {
    this.url = options.url
    this.name = options.name
    this.backoff = options.backoff ?? RECONNECT_BACKOFF
    this.events.setMaxListeners(0)
  }

  get connected(): boolean {
    return this.model !== null
  }

  status(): BrokerConnectionStatus {
    return { state: this.state, blocked: this.blocked, error: this.error }
  }

  /** Starts connecting (and recovering, until close()). Idempotent; asking for a channel starts it too. */
  start(): void {
    if (this.recovering || this.state === 'closed') return
    this.state = 'connecting'
    // Often started by the first request that asks for a channel, but shared and recovering long after it: its log
    // lines (connected, lost, reconnecting) belong to no request.
    outsideRequest(() => {
      const recovering = connect(this.url, {
        clientProperties: { connection_name: this.name, lazarus_process: BROKER_PROCESS_TAG },
        recovery: {
          setup: (model: ChannelModel) => this.runSetup(model),
          calculateDelay: (attempt: number) => backoffDelay(this.backoff, attempt),
          // Returned at once, so every listener is attached before the first attempt.
          waitForConnect: false,
        },
      })
      this.recovering = recovering
      void recovering.then((model) => this.listen(model))
    })
  }

  /**
   * A channel on the current connection; while there is none, waits up to `waitMs` for the next connection attempt
   * and fails with its error (or BrokerUnavailableError). The broker closing the channel is logged here, with
   * `context`; the owner listens to 'close' to start over.
   */
  async createChannel(options: ChannelRequest = {}): Promise<Channel> {
    const channel = await (await this.whenConnected(options.waitMs)).createChannel()
    this.logErrors(channel, options.context)
    return channel
  }

  async createConfirmChannel(options: ChannelRequest = {}): Promise<ConfirmChannel> {
    const channel = await (await this.whenConnected(options.waitMs)).createConfirmChannel()
    this.logErrors(channel, options.context)
    return channel
  }

  /** Runs `fn` on a throw-away channel (see probe.ts); its failure is the caller's answer, not logged. */
  withChannel<T>(fn: (channel: Channel) => Promise<T>, options: { waitMs?: number } = {}): Promise<T> {
    return withChannel(this.probeSource(options.waitMs), fn)
  }

  queueExists(queue: string, options: { waitMs?: number } = {}): Promise<boolean> {
    return queueExists(this.probeSource(options.waitMs), queue)
  }

  exchangeExists(exchange: string, options: { waitMs?: number } = {}): Promise<boolean> {
    return exchangeExists(this.probeSource(options.waitMs), exchange)
  }

  /**
   * Adds a hook that declares its user's topology now (when connected) and after every reconnection. A hook that
   * fails is logged and retried with backoff while the connection lasts; it holds neither the connection nor the
   * other hooks up (a refused declare must not stop draining).
   */
  addSetup(name: string, hook: SetupHook): SetupRegistration {
    let markReady!: () => void
    const ready = new Promise<void>((resolve) => (markReady = resolve))
    const entry: HookEntry = { name, hook, removed: false, ranOn: null, retry: null, markReady }
    this.hooks.add(entry)
    this.start()
    if (this.model) void this.runHook(entry, this.model)
    return {
      ready,
      remove: () => {
        entry.removed = true
        if (entry.retry) clearTimeout(entry.retry)
        this.hooks.delete(entry)
        markReady()
      },
    }
  }

  /** Subscribes to connect, disconnect, blocked and unblocked; returns the unsubscribe. */
  on<E extends keyof BrokerEvents>(event: E, listener: (...args: BrokerEvents[E]) => void): () => void {
    const untyped = listener as (...args: unknown[]) => void
    this.events.on(event, untyped)
    return () => this.events.off(event, untyped)
  }

  /** Closes the connection and ends recovery; pending channel requests fail. */
  async close(): Promise<void> {
    if (this.state === 'closed') return
    this.state = 'closed'
    this.model = null
    this.blocked = null
    for (const entry of this.hooks) {
      if (entry.retry) clearTimeout(entry.retry)
      entry.markReady()
    }
    this.events.emit('closed')
    const recovering = await this.recovering?.catch(() => null)
    await recovering?.close().catch((error: unknown) => log.debug('close failed', { connection: this.name, error: (error as Error).message }))
  }

  private listen(recovering: RecoveringChannelModel): void {
    recovering.on('connect', (model: ChannelModel) => {
      if (this.state === 'closed') return
      this.model = model
      this.state = 'connected'
      this.error = null
      log.info(this.connectedBefore ? 'reconnected to RabbitMQ' : 'connected to RabbitMQ', { connection: this.name })
      this.connectedBefore = true
      // Hooks added while the setup ran have not seen this connection yet.
      for (const entry of this.hooks) if (entry.ranOn !== model) void this.runHook(entry, model)
      this.events.emit('connect')
    })
    recovering.on('disconnect', (error: Error) => {
      this.model = null
      this.error = error.message
      const wasBlocked = this.blocked !== null
      this.blocked = null
      if (this.state === 'closed') return
      this.state = 'reconnecting'
      this.events.emit('disconnect', error)
      if (wasBlocked) this.events.emit('unblocked')
    })
    recovering.on('connect-failed', (error: Error) => {
      this.error = error.message
      if (this.state !== 'closed') this.state = 'reconnecting'
      this.events.emit('connect-failed', error)
    })
    recovering.on('reconnect-scheduled', ({ attempt, delay, error }: { attempt: number; delay: number; error: Error }) => {
      const lost = attempt === 1 && this.connectedBefore
      logAmqpError(lost ? 'connection lost; reconnecting' : 'cannot connect to RabbitMQ; retrying', error, { connection: this.name, attempt, retryInMs: delay })
    })
    recovering.on('reconnect-failed', (error: Error) => {
      this.error = error.message
      this.state = 'closed'
      logAmqpError('gave up reconnecting', error, { connection: this.name })
      this.events.emit('connect-failed', error)
    })
    recovering.on('blocked', (reason: string) => {
      this.blocked = reason || 'blocked'
      log.warn('broker blocks publishing', { connection: this.name, reason: this.blocked })
      this.events.emit('blocked', this.blocked)
    })
    recovering.on('unblocked', () => {
      this.blocked = null
      log.info('broker unblocked publishing', { connection: this.name })
      this.events.emit('unblocked')
    })
    // Followed by 'disconnect' with the same error, which is where it is logged.
    recovering.on('error', (error: Error) => log.debug('connection error', { connection: this.name, kind: classifyAmqpError(error), error: error.message }))
    // amqplib routes a throw from any listener of the connection here; unheard, it would vanish.
    recovering.on('handler-error', (error: Error, event: string) => log.error('a connection event listener threw', { connection: this.name, event, error: error.message }))
  }

  private isClosed(): boolean {
    return this.state === 'closed'
  }

  private probeSource(waitMs?: number): ChannelSource {
    return { createChannel: async () => (await this.whenConnected(waitMs)).createChannel() }
  }

  private logErrors(channel: Channel, context: Record<string, unknown> = {}): void {
    channel.on('error', (error: Error) => logAmqpError('channel closed by the broker', error, { connection: this.name, ...context }))
  }

  private whenConnected(waitMs = DEFAULT_WAIT_MS): Promise<ChannelModel> {
    this.start()
    if (this.model) return Promise.resolve(this.model)
    if (this.state === 'closed') return Promise.reject(new BrokerUnavailableError(`RabbitMQ connection "${this.name}" is closed`))
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer)
        this.events.off('connect', onConnect)
        this.events.off('connect-failed', onFailed)
        this.events.off('closed', onClosed)
      }
      const onConnect = () => {
        done()
        resolve(this.model!)
      }
      const onFailed = (error: Error) => {
        done()
        reject(error)
      }
      const onClosed = () => {
        done()
        reject(new BrokerUnavailableError(`RabbitMQ connection "${this.name}" is closed`))
      }
      const timer = setTimeout(() => {
        done()
        reject(new BrokerUnavailableError(`RabbitMQ connection "${this.name}" is not connected${this.error ? `: ${this.error}` : ''}`))
      }, waitMs)
      this.events.on('connect', onConnect)
      this.events.on('connect-failed', onFailed)
      this.events.on('closed', onClosed)
    })
  }

  /**
   * amqplib's setup step: every hook, each on its own (a failure is retried in the background). Throws only when the
   * connection itself closed meanwhile, so that amqplib starts over instead of keeping a dead connection.
   */
  private async runSetup(model: ChannelModel): Promise<void> {
    let closed: unknown = null
    const onClose = (error?: unknown) => (closed = error ?? new Error('connection closed during setup'))
    model.on('close', onClose)
    // Until amqplib takes the connection over after setup nothing listens for its 'error', and an unheard 'error'
    // event would throw out of the socket handler. What it reports reaches us as the 'close' above.
    model.on('error', () => {})
    try {
      await Promise.all([...this.hooks].map((entry) => this.runHook(entry, model)))
    } finally {
      model.off('close', onClose)
    }
    if (closed) throw closed
  }

  private async runHook(entry: HookEntry, model: ChannelModel, backoff = new Backoff(this.backoff)): Promise<void> {
    if (entry.removed || this.isClosed()) return
    entry.ranOn = model
    try {
      await entry.hook(model)
      backoff.reset()
      entry.markReady()
    } catch (error) {
      if (entry.removed || this.isClosed()) return
      const delay = backoff.next()
      logAmqpError(`setup "${entry.name}" failed; retrying`, error, { connection: this.name, attempt: backoff.attempt, retryInMs: delay })
      if (entry.retry) clearTimeout(entry.retry)
      entry.retry = setTimeout(() => {
        entry.retry = null
        // A new connection runs every hook anyway.
        if (this.model === model) void this.runHook(entry, model, backoff)
      }, delay)
      entry.retry.unref?.()
    }
  }
}

/** A named connection that starts connecting at once; its owner closes it. */
export function openBrokerConnection(options: BrokerConnectionOptions): BrokerConnection {
  const connection = new BrokerConnection(options)
  connection.start()
  return connection
}
