import 'server-only'
import { interruptibleRest } from '@/lib/server/platform/interruptible-rest'
import { jetstreamManager, jetstream, JetStreamApiError, type JetStreamManager, type JsMsg } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { buildJetStreamRow, type JetStreamFailure, type JetStreamStoredMessage } from '@/lib/server/ingest/build-jetstream-row'
import type { IngestRow } from '@/lib/server/ingest/types'
import type { Db } from '@/lib/server/platform/db'
import type { Logger } from '@/lib/server/platform/log'
import type { Config } from '@/lib/server/platform/config'
import type { Signal } from '@/lib/server/platform/signal'
import { connectNats, type NatsSettings } from '@/lib/server/platform/broker/nats'
import { storeBatchOrDegrade } from '@/lib/server/engines/drainer/store-batch-or-degrade'
import { SourceErrors } from '@/lib/server/engines/drainer/source-errors'
import { parseAdvisory } from './advisory'
import { ensureCapturePlan, type CapturePlan, type CaptureRoute } from './capture-plan'
import { loadJetStreamSources, sourceForFailure, type JetStreamSource } from './jetstream-sources'
import { removeCaptured, type MessageInStream, type RemovalOutcome } from './remove-captured'

/**
 * The JetStream capture (docs/jetstream.md#capture): reads consumers' failure advisories from the stream that keeps
 * them, reads each failed message back by its stream sequence, stores it, and acknowledges the advisory after the
 * commit. Why a crash loses or doubles nothing:
 *
 * 1. An advisory is acknowledged only after the transaction that stored its message committed. Dying before the ack
 *    leaves it unacknowledged: the server delivers it again after the ack wait (30 s), to this process or another.
 * 2. A row's fingerprint is its stream, consumer, sequence and kind of failure, so an advisory stored before and
 *    delivered again finds its row (ON CONFLICT) and adds nothing, not even a sighting (it arrives redelivered).
 * 3. A message the stream no longer holds is stored as a record of the advisory, flagged `message-gone`, and
 *    acknowledged like any other: the advisory is all there is left to keep.
 * 4. Nothing is held in memory between batches: a database or server that goes away costs a retry, not a message.
 * 5. For a source whose admin asked for it, a stored message is deleted from its stream after the commit and before
 *    the ack (remove-captured.ts): never one whose row was not stored, and again after a crash in between.
 */
export type JetStreamCapture = {
  stop(): Promise<void>
  status(): { captured: number; removed: number; lastError: string | null; plan: CapturePlan | null }
}

export type StartJetStreamCaptureOptions = {
  db: Db
  settings: NatsSettings & Pick<Config, 'LAZARUS_NATS_ADVISORY_STREAM' | 'LAZARUS_NATS_CONSUMER' | 'LAZARUS_NATS_ACK_WAIT_S'>
  log: Logger
  maxBodyBytes: number
  /** How often the sources (and with them the capture plan) are read again. */
  reconcileMs?: number
  /** Notified when this process changed a source: the capture reads the sources again at once. */
  sourcesChanged?: Signal
  /** Advisories per batch; one transaction per source in it. */
  batchSize?: number
  /** How long one fetch waits for advisories. */
  fetchMs?: number
}

type Captured = { msg: JsMsg; failure: JetStreamFailure; source: JetStreamSource }

type StreamMessageResponse = { message: { subject: string; seq: number; time: string; hdrs?: string; data?: string } }

/** The failed message as the stream still holds it, its header block and data byte for byte; null once removed. */
async function readStoredMessage(jsm: JetStreamManager, failure: JetStreamFailure): Promise<JetStreamStoredMessage | null> {
  let stored
  try {
    stored = await jsm.streams.getMessage(failure.stream, { seq: failure.streamSeq })
  } catch (error) {
    // The whole stream is gone: so is the message.
    if (error instanceof JetStreamApiError && error.code === 10059) return null
    throw error
  }
  if (!stored) return null
  // The client decodes the header block into a map; the base64 it received is the block exactly as stored.
  const raw = (stored as unknown as { smr?: StreamMessageResponse }).smr?.message
  if (!raw) throw new Error('the NATS client no longer exposes the stored message (smr): cannot keep its bytes exactly')
  return {
    subject: raw.subject,
    seq: raw.seq,
    time: new Date(raw.time),
    headerBlock: raw.hdrs ? Buffer.from(raw.hdrs, 'base64') : null,
    data: raw.data ? Buffer.from(raw.data, 'base64') : Buffer.alloc(0),
  }
}

export function startJetStreamCapture(options: StartJetStreamCaptureOptions): JetStreamCapture {
  const { db, log, settings } = options
  const reconcileMs = options.reconcileMs ?? 5_000
  const batchSize = options.batchSize ?? 256
  const fetchMs = options.fetchMs ?? 1_000
  const sql = db.background
  const errors = new SourceErrors({ sql, log })
  let stopped = false
  let captured = 0
  let removed = 0
  let lastError: string | null = null
  let plan: CapturePlan | null = null
  let nc: NatsConnection | null = null
  let jsm: JetStreamManager | null = null
  const { rest, interrupt } = interruptibleRest()

  /**
   * What keeps each source from being captured as asked, by source id, shown on the sources page until it is solved:
   * the plan's problem (no stream can keep its advisories), else why its captured messages could not be deleted from
   * their stream (stored all the same, and the capture goes on) until a later removal succeeds or the admin turns
   * removal off.
   */
  const problems = { plan: new Map<string, string>(), removal: new Map<string, string>() }
  const showState = (source: JetStreamSource) =>
    errors.record({ id: source.id, queue: source.label }, problems.plan.get(source.id) ?? problems.removal.get(source.id) ?? null)
  const noteRemoval = (source: JetStreamSource, outcome: RemovalOutcome) => {
    removed += outcome.removed
    if (!outcome.failed) return void problems.removal.delete(source.id)
    const { count, streams, reason } = outcome.failed
    const problem = `${count} captured message${count === 1 ? '' : 's'} could not be deleted from ${streams.join(', ')} and stay${count === 1 ? 's' : ''} there (stored all the same): ${reason}`
    log.warn('cannot delete captured messages from their stream; they are stored, and the capture goes on', { source: source.label, count, streams, reason })
    problems.removal.set(source.id, problem)
  }

  const storeCaptured = async (jsm: JetStreamManager, batch: Captured[]): Promise<void> => {
    const messages = await Promise.all(batch.map((c) => readStoredMessage(jsm, c.failure)))
    const bySource = new Map<string, { source: JetStreamSource; rows: IngestRow[]; msgs: JsMsg[]; inStream: MessageInStream[] }>()
    batch.forEach((c, i) => {
      const entry = bySource.get(c.source.id) ?? { source: c.source, rows: [], msgs: [], inStream: [] }
      entry.rows.push(buildJetStreamRow({
        sourceLabel: c.source.label, failure: c.failure, message: messages[i], redelivered: c.msg.info.deliveryCount > 1,
        entityKeyRule: c.source.entityKey, entityVersionRule: c.source.entityVersion, maxBodyBytes: options.maxBodyBytes,
      }))
      entry.msgs.push(c.msg)
      // Read back whole, so its row holds all the stream did: the only kind of message removal deletes.
      if (messages[i]) entry.inStream.push({ stream: c.failure.stream, seq: c.failure.streamSeq })
      bySource.set(c.source.id, entry)
    })
    for (const { source, rows, msgs, inStream } of bySource.values()) {
      try {
        await storeBatchOrDegrade({ sql, sourceId: source.id, sourceLabel: source.label, rows })
      } catch (error) {
        // Not stored: the advisories come back after a short delay, nothing was acknowledged, nothing deleted.
        for (const msg of msgs) msg.nak(2_000)
        errors.record({ id: source.id, queue: source.label }, `cannot store: ${(error as Error).message}`)
        throw error
      }
      // Committed: delete, then ack. A crash between the two leaves the advisory unacknowledged; its next delivery deletes.
      if (source.removeAfterCapture && inStream.length > 0) noteRemoval(source, await removeCaptured({ jsm, messages: inStream }))
      for (const msg of msgs) msg.ack()
      captured += rows.length
      showState(source)
    }
  }

  /** The sources and the plan the capture works with; reloaded on a schedule, and at once for an unknown stream. */
  const state = { sources: [] as JetStreamSource[], sourcesAt: 0, planKey: '', plannedAt: 0 }

  const reloadSources = async () => {
    state.sources = await loadJetStreamSources({ sql })
    state.sourcesAt = performance.now()
    // Removal turned off: what it could not delete is no longer asked of it.
    for (const source of state.sources) if (!source.removeAfterCapture && problems.removal.delete(source.id)) showState(source)
  }
  const reloadSourcesIfStale = async () => {
    if (state.sourcesAt === 0 || performance.now() - state.sourcesAt >= reconcileMs) await reloadSources()
  }

  const ensurePlan = async (jsm: JetStreamManager): Promise<CapturePlan> => {
    const key = [...new Set(state.sources.map((s) => s.stream))].sort().join('\u0000')
    if (plan && key === state.planKey && performance.now() - state.plannedAt < reconcileMs * 12) return plan
    const next = await ensureCapturePlan({
      jsm, ownStream: settings.LAZARUS_NATS_ADVISORY_STREAM, consumer: { name: settings.LAZARUS_NATS_CONSUMER, ackWaitSeconds: settings.LAZARUS_NATS_ACK_WAIT_S },
      sourceStreams: state.sources.map((s) => s.stream),
    })
    plan = next
    state.planKey = key
    state.plannedAt = performance.now()
    for (const source of state.sources) {
      const route = next.bySource.get(source.stream)
      if (route && 'problem' in route) problems.plan.set(source.id, route.problem)
      else problems.plan.delete(source.id)
      showState(source)
    }
    return next
  }

  /**
   * The advisory's failure and source when this route is where the plan reads it; 'not-ours' when it is no failure or
   * read elsewhere, 'unknown-stream' when no source (or plan) covers its stream as far as this process knows.
   */
  const classify = (msg: JsMsg, route: CaptureRoute, current: CapturePlan): Captured | 'not-ours' | 'unknown-stream' => {
    const failure = parseAdvisory(msg.data)
    if (!failure) return 'not-ours'
    const source = sourceForFailure(state.sources, failure.stream, failure.consumer)
    const routeOfStream = current.bySource.get(failure.stream)
    if (!source || !routeOfStream) return 'unknown-stream'
    // Read where the plan says: the same advisory may also sit in another stream this capture reads.
    if ('problem' in routeOfStream || routeOfStream.advisoryStream !== route.advisoryStream) return 'not-ours'
    return { msg, failure, source }
  }

  const captureRound = async (conn: NatsConnection, jsm: JetStreamManager, current: CapturePlan): Promise<number> => {
    const js = jetstream(conn)
    let seen = 0
    for (const route of current.streams) {
      const consumer = await js.consumers.get(route.advisoryStream, settings.LAZARUS_NATS_CONSUMER)
      // The client refuses waits under a second.
      const messages = await consumer.fetch({ max_messages: batchSize, expires: Math.max(1_000, fetchMs / Math.max(1, current.streams.length)) })
      const fetched: JsMsg[] = []
      for await (const msg of messages) fetched.push(msg)
      seen += fetched.length
      // The fetch may have waited a while: a change to a source since (removal turned on or off) applies to these.
      if (fetched.length > 0) await reloadSourcesIfStale()
      let decided = fetched.map((msg) => classify(msg, route, current))
      // A stream with no source (yet): a source added since the sources were read must not lose its first failures.
      if (decided.includes('unknown-stream')) {
        await reloadSources()
        const replanned = await ensurePlan(jsm)
        decided = fetched.map((msg) => classify(msg, route, replanned))
      }
      const batch: Captured[] = []
      decided.forEach((d, i) => {
        // Not a failure of a stream Lazarus captures (a team's stream keeps other advisories too): nothing to store.
        if (typeof d === 'string') fetched[i].ack()
        else batch.push(d)
      })
      if (batch.length > 0) await storeCaptured(jsm, batch)
      await conn.flush()
    }
    return seen
  }

  // A source disabled or added through this process applies before the change is answered (as for the drainer).
  const unlisten = options.sourcesChanged?.listen(() => {
    state.sourcesAt = 0
    interrupt()
  })

  const loop = (async () => {
    let failures = 0
    while (!stopped) {
      try {
        await reloadSourcesIfStale()
        if (state.sources.length === 0) {
          await rest(reconcileMs)
          state.sourcesAt = 0
          continue
        }
        if (!nc || !jsm) {
          nc = await connectNats(settings, 'lazarus-capture')
          // Once per connection: making a manager asks the server whether JetStream is enabled.
          jsm = await jetstreamManager(nc)
        }
        const current = await ensurePlan(jsm)
        const seen = await captureRound(nc, jsm, current)
        failures = 0
        lastError = null
        if (seen === 0 && current.streams.length === 0) await rest(reconcileMs)
      } catch (error) {
        failures++
        lastError = (error as Error).message
        log.warn('JetStream capture round failed; retrying', { error: lastError, failures })
        // On the sources page until a round plans again (which records each source's state afresh).
        for (const source of state.sources) errors.record({ id: source.id, queue: source.label }, `cannot capture from NATS: ${lastError}`)
        plan = null
        await rest(Math.min(30_000, 500 * 2 ** Math.min(failures, 6)))
      }
    }
  })()

  return {
    async stop() {
      stopped = true
      unlisten?.()
      interrupt()
      await loop
      await nc?.drain().catch(() => undefined)
    },
    status: () => ({ captured, removed, lastError, plan }),
  }
}
