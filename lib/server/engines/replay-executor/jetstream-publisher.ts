import 'server-only'
import { JetStreamApiError, jetstream, type JetStreamClient, type PubAck } from '@nats-io/jetstream'
import { errors as natsErrors, headers as natsHeaders } from '@nats-io/transport-node'
import type { NatsLink } from '@/lib/server/platform/broker/nats-link'
import type { Logger } from '@/lib/server/platform/log'
import type { ReplaySettings } from '@/lib/server/replay/replay-settings'
import { buildJetStreamPublish, type JetStreamPublishBuild } from '@/lib/server/replay/jetstream-publish'
import { InFlightWindow } from './in-flight-window'
import { waitForPublishSlot } from './publish-slot'
import type { ItemRow, JobRow } from './job-store'
import type { LeaseKeeper } from './lease-keeper'
import type { OutcomeWriter } from './outcome-writer'
import type { RunControl } from './run-control'
import { TokenBucket, type RateMeter } from './token-bucket'

/** On shutdown, how long to wait for outstanding PubAcks before leaving their items to the next worker. */
const STOP_GRACE_MS = 5_000

type Pending = { seq: number; groupId: string; sourceId: string; at: number }

export type JetStreamPublisherOptions = {
  job: JobRow
  settings: ReplaySettings
  /** The executor's NATS connection; null when this process has no LAZARUS_NATS_URL. */
  nats: NatsLink | null
  control: RunControl
  lease: LeaseKeeper
  outcomes: OutcomeWriter
  meter: RateMeter
  log: Logger
}

/**
 * Publishes a job's JetStream items (docs/jetstream.md#replay) and settles each with the server's answer, as the
 * RabbitMQ Publisher does with confirms:
 *
 * - each copy goes to its subject with `Nats-Msg-Id` set to the item's replay id, so a copy a crash makes Lazarus
 *   publish again is dropped by the stream's duplicate window: its PubAck says `duplicate`, the item counts as
 *   replayed (the stream has it) and the job counts the duplicate;
 * - a PubAck is `confirmed`; no stream on the subject (the server's "no responders") is `unroutable`; a stream's
 *   refusal, no PubAck within LAZARUS_REPLAY_CONFIRM_TIMEOUT_MS or a lost connection is `failed`: the message stays
 *   dead with the reason;
 * - the same window, token bucket, lease and outcome backlog hold publishing back.
 */
export class JetStreamPublisher {
  private client: JetStreamClient | null = null
  private maxPayload: number | null = null
  private readonly unconfirmed = new Map<string, Pending>()
  private readonly bucket: TokenBucket
  private readonly window: InFlightWindow

  constructor(private readonly options: JetStreamPublisherOptions) {
    this.bucket = new TokenBucket(options.job.rate_per_second)
    this.window = new InFlightWindow(options.settings.window)
  }

  async publishChunk(chunk: ItemRow[]): Promise<void> {
    const { outcomes, nats } = this.options
    for (const item of chunk) {
      const settle = (status: 'skipped' | 'failed', error: string) => outcomes.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status, error })
      if (item.row_status !== 'replaying') {
        settle('skipped', `not published: the message is ${item.row_status}, not replaying`)
        continue
      }
      if (nats === null) {
        settle('failed', 'not published: LAZARUS_NATS_URL is not set where the replay runs (docs/jetstream.md#connecting)')
        continue
      }
      const subject = item.routing_key
      if (!subject) {
        settle('skipped', 'not published: the message has no subject to go back to')
        continue
      }
      if (!(await this.waitUntilReady())) return
      const build = this.build(item)
      if (!build.ok) {
        settle('skipped', build.message)
        continue
      }
      this.publishNow(item, subject, build)
    }
  }

  /** Waits until every publish has its answer (each has its own timeout); on shutdown for STOP_GRACE_MS at most. */
  async awaitConfirms(): Promise<void> {
    const { control } = this.options
    const deadline = Date.now() + STOP_GRACE_MS
    while (this.unconfirmed.size > 0 && !control.leaseLost && !(control.stopping && Date.now() > deadline)) await control.pause(100)
  }

  private build(item: ItemRow): JetStreamPublishBuild {
    const { job, settings } = this.options
    const properties = (JSON.parse(item.properties_json) ?? {}) as Record<string, unknown>
    return buildJetStreamPublish(
      {
        id: item.dead_letter_id, body: Buffer.from(item.body.buffer, item.body.byteOffset, item.body.byteLength), properties, headers: JSON.parse(item.headers_json) ?? {},
        lineageOriginId: item.lineage_origin_id, replayCount: item.replay_count, headerBlockKept: typeof properties.headerBlock === 'string',
      },
      { kind: 'replay', replayId: item.replay_id, actor: job.created_by, pauseId: null, revision: item.revision, newTrace: job.new_trace },
      { maxBodyBytes: settings.maxBodyBytes, maxPayload: this.maxPayload },
    )
  }

  /** A connection, a fresh lease, room in the window and the writer, and a rate token; false when publishing must stop. */
  private waitUntilReady(): Promise<boolean> {
    const { control, lease, outcomes, nats } = this.options
    return waitForPublishSlot({
      control, lease, outcomes, window: this.window, bucket: this.bucket, unconfirmed: () => this.unconfirmed.size,
      needsConnection: () => !this.client,
      connect: async () => {
        const connection = await control.retry('connect to NATS', () => nats!.connection())
        this.client = jetstream(connection)
        this.maxPayload = connection.info?.max_payload ?? null
      },
      heldBack: () => false,
    })
  }

  private publishNow(item: ItemRow, subject: string, build: Extract<JetStreamPublishBuild, { ok: true }>): void {
    const { outcomes, settings, control, meter } = this.options
    const base = { seq: item.seq, groupId: item.group_id, sourceId: item.source_id }
    const replayId = item.replay_id
    const headers = natsHeaders()
    try {
      for (const [name, value] of build.headers) headers.append(name, value)
    } catch (error) {
      outcomes.settle({ ...base, status: 'skipped', error: `cannot replay: ${(error as Error).message.slice(0, 300)}` })
      return
    }
    const at = Date.now()
    this.unconfirmed.set(replayId, { ...base, at })
    meter.add()
    this.client!.publish(subject, build.data, { msgID: replayId, headers, timeout: settings.confirmTimeoutMs }).then(
      (ack: PubAck) => {
        this.unconfirmed.delete(replayId)
        outcomes.settle({ ...base, status: 'confirmed', error: ack.duplicate ? `duplicate: stream "${ack.stream}" already had this copy (published before a restart) and dropped it` : null, publishedAt: at, duplicate: ack.duplicate })
        control.wake()
      },
      (error: unknown) => {
        this.unconfirmed.delete(replayId)
        const { status, reason } = publishFailure(error, subject, settings.confirmTimeoutMs)
        outcomes.settle({ ...base, status, error: reason, publishedAt: at })
        control.wake()
      },
    )
  }
}

/** What a failed JetStream publish means for its message. */
export function publishFailure(error: unknown, subject: string, timeoutMs: number): { status: 'unroutable' | 'failed'; reason: string } {
  // The client's words for "no responders" are "jetstream is not enabled" (docs/jetstream.md#replay); the package does
  // not export that error's class.
  if ((error as Error)?.name === 'JetStreamNotEnabled' || error instanceof natsErrors.NoRespondersError) return { status: 'unroutable', reason: `unroutable: no stream captures subject "${subject}"` }
  if (error instanceof JetStreamApiError) return { status: 'failed', reason: `refused by the stream: ${error.message} (error ${error.code})` }
  if (error instanceof natsErrors.TimeoutError) return { status: 'failed', reason: `not confirmed: no PubAck from the NATS server within ${timeoutMs} ms` }
  return { status: 'failed', reason: `not confirmed: ${(error as Error).message?.slice(0, 300) ?? String(error)}` }
}
