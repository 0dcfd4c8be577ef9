import 'server-only'
import type { TopologyObjectRef } from '@/lib/shared/schemas/topology'
import { formatDelay } from '@/lib/shared/topology/three-tier'
import type { ObservedAckTimes } from '../ack-times'
import type { JetStreamEvidence } from '../jetstream-evidence'
import type { SnapshotConsumer, SnapshotStream } from '../jetstream-snapshot'
import { objectKey, type DiagnosedFinding, type FindingDraft, type RuleOutput } from '../../rules/rule-kit'

/**
 * The findings and the last run of the JetStream doctor are kept under this vhost, as JetStream sources keep theirs
 * (RabbitMQ has no empty vhost, so it names no RabbitMQ scope): the doctor's store, acknowledgements, metrics and
 * alerts then work for both brokers unchanged.
 */
export const JETSTREAM_SCOPE = ''

/** The doctor's limits for JetStream (docs/jetstream.md#the-doctors-jetstream-findings). */
export type JetStreamThresholds = {
  /**
   * stream-limits-drop-failures: how long a failed message (or its advisory) must be able to wait to be read: a night
   * or a weekend without the capture, or a team reading failures by hand. 24 hours.
   */
  triageWindowMs: number
  /** …a stream at this share of max_msgs or max_bytes (discard old) is removing its oldest messages already. */
  fullRatio: number
  /** …a per-subject limit below this many messages removes a failed message once that many newer ones share its subject. */
  perSubjectMin: number
  /** ack-wait-too-short: the 95th percentile of sampled ack times at this share of ack_wait (or any ack past it). */
  ackWaitRatio: number
}

export const DEFAULT_JETSTREAM_THRESHOLDS: JetStreamThresholds = { triageWindowMs: 24 * 3_600_000, fullRatio: 0.9, perSubjectMin: 10, ackWaitRatio: 0.8 }

/** A stream and the doctor's view of it. */
export type AnalysedStream = {
  id: string
  stream: SnapshotStream
  /** Lazarus created it (its description starts `Lazarus:`, as the capture marks its stream and consumers). */
  lazarus: boolean
  keepsAdvisories: boolean
  /** The source capturing all of its consumers (`stream/*`), if any. */
  sourceId: string | null
}

/** A consumer, the streams that keep its failure advisories, and the source capturing its failures. */
export type AnalysedConsumer = {
  id: string
  /** `stream/consumer`, the consumer's name in findings. */
  name: string
  stream: AnalysedStream
  consumer: SnapshotConsumer
  lazarus: boolean
  keepers: { maxDeliveries: string[]; terminated: string[] }
  sourceId: string | null
}

export type JetStreamRuleInput = {
  streams: AnalysedStream[]
  consumers: AnalysedConsumer[]
  evidence: JetStreamEvidence
  /** null: this process samples no acks (it runs no engines), so ack_wait is not judged by this run. */
  ackTimes: ObservedAckTimes[] | null
  thresholds: JetStreamThresholds
  /** When the server was read. */
  now: Date
  /** Lazarus' own advisory stream (LAZARUS_NATS_ADVISORY_STREAM), for the fixes' words. */
  ownAdvisoryStream: string
}

export type JetStreamRule = (input: JetStreamRuleInput) => RuleOutput

export const streamRef = (name: string): TopologyObjectRef => ({ type: 'stream', name })
export const consumerRef = (name: string): TopologyObjectRef => ({ type: 'consumer', name })

export function jetStreamFinding(draft: FindingDraft): DiagnosedFinding {
  return { ...draft, vhost: JETSTREAM_SCOPE, cycle: null, messagesQuery: draft.messagesQuery ?? null, key: findingKey(draft.kind, draft.objects) }
}

/** kind + the objects: the same finding across runs (docs/topology.md#findings). */
export const findingKey = (kind: string, objects: TopologyObjectRef[]) => `${kind}|jetstream|${objectKey(objects)}`

/** The consumers the rules judge: those that take acks (ack none never redelivers) and are not Lazarus' own. */
export const judgedConsumers = (consumers: readonly AnalysedConsumer[]) => consumers.filter((c) => !c.lazarus && c.consumer.ackPolicy !== 'none')

/** A configured duration: `30s`, `1h`, `unlimited` for 0 or less. */
export const duration = (ms: number) => (ms <= 0 ? 'unlimited' : formatDelay(Math.round(ms)))

/** A measured time: `250ms`, `1.5s`, `2.5m`, `1h`. */
export function measured(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)}ms`
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`
  if (ms < 3_600_000) return `${Number((ms / 60_000).toFixed(1))}m`
  return `${Number((ms / 3_600_000).toFixed(1))}h`
}

/** A limit of the server's where -1 (or 0) means none. */
export const limit = (value: number) => (value <= 0 ? 'unlimited' : String(value))

export const maxDeliverText = (c: SnapshotConsumer) => (c.maxDeliver <= 0 ? `${c.maxDeliver} (unlimited)` : String(c.maxDeliver))

export const sourceText = (sourceId: string | null) => (sourceId ? `source ${sourceId}` : 'none')
