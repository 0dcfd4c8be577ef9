import 'server-only'
import { vhostOf } from '@/lib/server/amqp/amqp-url'
import { connect, type ChannelModel } from '@/lib/server/amqp/amqplib'
import type { Config } from '@/lib/server/config'
import type { Sql } from '@/lib/server/db/sql'
import { entityKeyRuleSchema } from '@/lib/shared/schemas/source'
import { logger } from '@/lib/server/log'
import { SourceConsumer, type DrainSource } from './source-consumer'

export type DrainerState = 'starting' | 'running' | 'broker-unavailable' | 'stopped'

export type DrainerStatus = {
  state: DrainerState
  brokerError: string | null
  sources: { id: string; queue: string; draining: boolean; stored: number; error: string | null }[]
}

export type StartDrainerOptions = {
  sql: Sql
  config: Pick<Config, 'AMQP_URL' | 'LAZARUS_DRAIN_BATCH' | 'LAZARUS_DRAIN_PREFETCH' | 'LAZARUS_DRAIN_FLUSH_MS' | 'LAZARUS_MAX_BODY_BYTES'>
  /** How often the source list is re-read and stopped consumers are restarted. */
  reconcileMs?: number
  maxHoldMs?: number
  connectionName?: string
}

export type Drainer = { status(): DrainerStatus; stop(): Promise<void>; reconcile(): Promise<void> }

const log = logger('drainer')

/**
 * Keeps one consumer per enabled source on a dedicated connection (draining never shares a connection
 * with publishing: a blocked publisher must not stall consumption). Reconnects with backoff after a broker
 * restart, restarts consumers whose queue disappeared once it exists again, and picks up sources added
 * through the API by any process.
 */
export function startDrainer(options: StartDrainerOptions): Drainer {
  const { sql, config } = options
  const reconcileMs = options.reconcileMs ?? 5_000
  const consumers = new Map<string, SourceConsumer>()
  const errors = new Map<string, string | null>()
  let connection: ChannelModel | null = null
  let connecting: Promise<void> | null = null
  let state: DrainerState = 'starting'
  let brokerError: string | null = null
  let stopped = false
  let reconnectDelay = 500
  let timer: NodeJS.Timeout | null = null

  const recordError = (source: DrainSource, message: string | null) => {
    if (errors.get(source.id) === message) return
    errors.set(source.id, message)
    void sql
      .query(
        message === null
          ? 'UPDATE sources SET last_error = NULL, last_error_at = NULL WHERE id = $1::bigint'
          : 'UPDATE sources SET last_error = $2, last_error_at = now() WHERE id = $1::bigint',
        message === null ? [source.id] : [source.id, message.slice(0, 1000)],
      )
      .catch(() => {})
  }

  async function ensureConnection(): Promise<ChannelModel | null> {
    if (connection) return connection
    connecting ??= (async () => {
      try {
        const model = await connect(config.AMQP_URL, { clientProperties: { connection_name: options.connectionName ?? 'lazarus-drainer' } })
        model.on('error', (error: Error) => log.warn('connection error', { error: error.message }))
        model.on('close', () => {
          if (connection !== model) return
          connection = null
          consumers.clear()
          if (!stopped) {
            state = 'broker-unavailable'
            brokerError = 'connection to RabbitMQ lost'
            log.warn('connection lost; reconnecting')
            schedule(reconnectDelay)
          }
        })
        connection = model
        state = 'running'
        brokerError = null
        reconnectDelay = 500
        log.info('connected to RabbitMQ')
      } catch (error) {
        state = 'broker-unavailable'
        brokerError = (error as Error).message
        reconnectDelay = Math.min(reconnectDelay * 2, 10_000)
        log.warn('cannot connect to RabbitMQ', { error: brokerError, retryInMs: reconnectDelay })
      } finally {
        connecting = null
      }
    })()
    await connecting
    return connection
  }

  async function loadSources(): Promise<DrainSource[]> {
    const { rows } = await sql.query<{ id: string; vhost: string; queue: string; entity_key: unknown; kind: string }>(
      `SELECT id::text, vhost, queue, entity_key, kind FROM sources WHERE enabled ORDER BY id`,
    )
    return rows.map((r) => {
      const rule = entityKeyRuleSchema.safeParse(r.entity_key)
      return { id: r.id, vhost: r.vhost, queue: r.queue, entityKey: rule.success ? rule.data : null, kind: r.kind === 'hold' ? 'hold' : 'dlq' }
    })
  }

  async function reconcile(): Promise<void> {
    if (stopped) return
    const model = await ensureConnection()
    if (!model) return
    let sources: DrainSource[]
    try {
      sources = await loadSources()
    } catch (error) {
      log.warn('cannot read sources from the database', { error: (error as Error).message })
      return
    }
    const wanted = new Set(sources.map((s) => s.id))
    for (const [id, consumer] of consumers) {
      if (!wanted.has(id)) {
        consumers.delete(id)
        await consumer.stop()
      }
    }
    for (const source of sources) {
      const running = consumers.get(source.id)
      if (running) {
        // Settings edited through the API apply to the next delivery, without restarting the consumer.
        running.updateEntityKey(source.entityKey)
        continue
      }
      // One connection serves one vhost: the one AMQP_URL names.
      if (source.vhost !== vhostOf(config.AMQP_URL)) {
        recordError(source, `vhost "${source.vhost}" is not drained: AMQP_URL connects to vhost "${vhostOf(config.AMQP_URL)}"`)
        continue
      }
      const consumer = new SourceConsumer({
        source,
        connection: model,
        sql,
        log,
        batchSize: config.LAZARUS_DRAIN_BATCH,
        prefetch: Math.max(config.LAZARUS_DRAIN_PREFETCH, config.LAZARUS_DRAIN_BATCH + 1),
        flushMs: config.LAZARUS_DRAIN_FLUSH_MS,
        maxBodyBytes: config.LAZARUS_MAX_BODY_BYTES,
        maxHoldMs: options.maxHoldMs ?? 20 * 60_000,
        onError: (message) => recordError(source, message),
        onEnd: (reason) => {
          if (consumers.get(source.id) === consumer) consumers.delete(source.id)
          if (!stopped && reason !== 'stopped' && reason !== 'start failed') log.warn('consumer ended; will retry', { queue: source.queue, reason })
        },
      })
      consumers.set(source.id, consumer)
      try {
        await consumer.start()
        recordError(source, null)
      } catch (error) {
        consumers.delete(source.id)
        await consumer.close('start failed')
        const message = describeConsumeFailure(error, source.queue)
        if (errors.get(source.id) !== message) log.warn('cannot drain source', { queue: source.queue, error: message, reply: (error as Error).message })
        recordError(source, message)
      }
    }
  }

  function schedule(ms: number) {
    if (stopped) return
    if (timer) clearTimeout(timer)
    timer = setTimeout(async () => {
      timer = null
      try {
        await reconcile()
      } catch (error) {
        log.error('reconcile failed', { error: (error as Error).message })
      }
      schedule(connection ? reconcileMs : reconnectDelay)
    }, ms)
  }

  schedule(0)

  return {
    status: () => ({
      state,
      brokerError,
      sources: [...consumers.values()].map((c) => {
        const id = [...consumers.entries()].find(([, v]) => v === c)?.[0] ?? ''
        return { id, queue: c.queue, draining: true, stored: c.stored, error: errors.get(id) ?? null }
      }),
    }),
    reconcile,
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await Promise.all([...consumers.values()].map((c) => c.stop().catch(() => {})))
      consumers.clear()
      state = 'stopped'
      const model = connection
      connection = null
      if (model) await model.close().catch(() => {})
    },
  }
}

/** Broker replies to basic.consume, said in an operator's words (the raw reply stays in the log line). */
export function describeConsumeFailure(error: unknown, queue: string): string {
  const raw = (error as Error)?.message ?? String(error)
  const code = (error as { code?: unknown })?.code
  if (code === 404 || /NOT[_-]FOUND/.test(raw)) return `queue "${queue}" does not exist (deleted, or not declared yet)`
  if (code === 403 || /ACCESS[_-]REFUSED/.test(raw)) return `access to queue "${queue}" refused: the broker user may not consume from it`
  if (code === 405 || /RESOURCE[_-]LOCKED/.test(raw)) return `queue "${queue}" is exclusive to another connection`
  return raw
}
