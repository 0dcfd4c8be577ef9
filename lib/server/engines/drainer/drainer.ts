import 'server-only'
import { logAmqpError, REPLY, replyCodeOf } from '@/lib/server/platform/broker/amqp-errors'
import { amqpVhost } from '@/lib/server/platform/broker/amqp-url'
import { openBrokerConnection } from '@/lib/server/platform/broker/connection'
import type { Config } from '@/lib/server/platform/config'
import type { Sql } from '@/lib/server/platform/db/sql'
import { entityKeyRuleSchema } from '@/lib/shared/schemas/source'
import { logger } from '@/lib/server/platform/log'
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
 * with publishing: a blocked publisher must not stall consumption). The connection recovers on its own
 * (lib/server/broker) and the consumers start again on the new one; consumers whose queue disappeared are
 * restarted once it exists again, and sources added through the API by any process are picked up.
 */
export function startDrainer(options: StartDrainerOptions): Drainer {
  const { sql, config } = options
  const reconcileMs = options.reconcileMs ?? 5_000
  const vhost = amqpVhost(config.AMQP_URL)
  const consumers = new Map<string, SourceConsumer>()
  const errors = new Map<string, string | null>()
  const broker = openBrokerConnection({ url: config.AMQP_URL, name: options.connectionName ?? 'lazarus-drainer' })
  let stopped = false
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
      .catch((error: unknown) => log.warn('cannot record the source\'s error in sources.last_error', { queue: source.queue, sourceError: message, error: (error as Error).message }))
  }

  // The consumers' channels closed with the connection (each ends itself); they start again once it is back.
  const offDisconnect = broker.on('disconnect', () => consumers.clear())
  const offConnect = broker.on('connect', () => schedule(0))

  function state(): { state: DrainerState; brokerError: string | null } {
    if (stopped) return { state: 'stopped', brokerError: null }
    const { state, error } = broker.status()
    if (state === 'connected') return { state: 'running', brokerError: null }
    if (state === 'idle' || state === 'connecting') return { state: 'starting', brokerError: null }
    return { state: 'broker-unavailable', brokerError: error }
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
    if (stopped || !broker.connected) return
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
      if (source.vhost !== vhost) {
        recordError(source, `vhost "${source.vhost}" is not drained: AMQP_URL connects to vhost "${vhost}"`)
        continue
      }
      const consumer = new SourceConsumer({
        source,
        broker,
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
        if (errors.get(source.id) !== message) logAmqpError('cannot drain source', error, { queue: source.queue, reason: message })
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
      schedule(reconcileMs)
    }, ms)
  }

  schedule(0)

  return {
    status: () => ({
      ...state(),
      sources: [...consumers.values()].map((c) => {
        const id = [...consumers.entries()].find(([, v]) => v === c)?.[0] ?? ''
        return { id, queue: c.queue, draining: true, stored: c.stored, error: errors.get(id) ?? null }
      }),
    }),
    reconcile,
    async stop() {
      stopped = true
      offConnect()
      offDisconnect()
      if (timer) clearTimeout(timer)
      // A consumer that cannot write what it holds leaves it unacked: the broker requeues it when the connection closes.
      await Promise.all([...consumers.values()].map((c) => c.stop().catch((error: unknown) => log.warn('consumer did not stop cleanly; unwritten deliveries go back to the queue', { queue: c.queue, error: (error as Error).message }))))
      consumers.clear()
      await broker.close()
    },
  }
}

/** Broker replies to basic.consume, said in an operator's words (the raw reply stays in the log line). */
export function describeConsumeFailure(error: unknown, queue: string): string {
  switch (replyCodeOf(error)) {
    case REPLY.NOT_FOUND:
      return `queue "${queue}" does not exist (deleted, or not declared yet)`
    case REPLY.ACCESS_REFUSED:
      return `access to queue "${queue}" refused: the broker user may not consume from it`
    case REPLY.RESOURCE_LOCKED:
      return `queue "${queue}" is exclusive to another connection`
    default:
      return (error as Error)?.message ?? String(error)
  }
}
