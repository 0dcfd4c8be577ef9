import 'server-only'
import type { AckTimesDto, JetStreamSettingDto, TopologyCheckDto, TopologyEdgeDto, TopologyNodeDto } from '@/lib/shared/schemas/topology'
import { runRules, worstFirst, worstSeverityByNode, type DiagnosedFinding } from '../rules/rule-kit'
import { summariseAcks, type ObservedAckTimes } from './ack-times'
import type { JetStreamEvidence, JetStreamSourceRef } from './jetstream-evidence'
import { keepsAdvisories, type JetStreamSnapshot, type SnapshotConsumer, type SnapshotStream } from './jetstream-snapshot'
import { subjectsOverlap } from '@/lib/shared/nats-subjects'
import { consumerAdvisorySubjects } from '@/lib/server/platform/broker/nats-advisory-subjects'
import { ackWaitRule, noBackoffRule, noMaxDeliverRule } from './rules/consumer-redelivery'
import { advisoriesCapturedRule, terminatedMessageGoneRule } from './rules/failure-capture'
import {
  DEFAULT_JETSTREAM_THRESHOLDS,
  duration,
  limit,
  type AnalysedConsumer,
  type AnalysedStream,
  type JetStreamRule,
  type JetStreamRuleInput,
  type JetStreamThresholds,
} from './rules/jetstream-kit'
import { streamLimitsRule } from './rules/stream-limits'

export type JetStreamDiagnosis = {
  serverVersion: string
  nodes: TopologyNodeDto[]
  edges: TopologyEdgeDto[]
  findings: DiagnosedFinding[]
  checks: TopologyCheckDto[]
}

const RULES: JetStreamRule[] = [noMaxDeliverRule, advisoriesCapturedRule, streamLimitsRule, ackWaitRule, noBackoffRule, terminatedMessageGoneRule]

/** Lazarus marks the stream and the consumers its capture creates: their description starts so (capture-plan.ts). */
const isLazarus = (description: string | null) => description?.startsWith('Lazarus:') ?? false

/** The streams whose subjects cover a subject: where a message on it is kept. */
const keepersOf = (streams: readonly SnapshotStream[], subject: string) => streams.filter((s) => s.subjects.some((pattern) => subjectsOverlap(pattern, subject))).map((s) => s.name)

function sourceOf(sources: readonly JetStreamSourceRef[], stream: string, consumer: string | null): string | null {
  let catchAll: string | null = null
  for (const s of sources) {
    if (s.stream !== stream) continue
    if (consumer !== null && s.consumer === consumer) return s.id
    if (s.consumer === null) catchAll ??= s.id
  }
  return catchAll
}

function analyse(snapshot: JetStreamSnapshot, sources: readonly JetStreamSourceRef[], ownConsumer: string): { streams: AnalysedStream[]; consumers: AnalysedConsumer[] } {
  const streams = snapshot.streams.map((stream) => ({
    id: `s:${stream.name}`,
    stream,
    lazarus: isLazarus(stream.description),
    keepsAdvisories: keepsAdvisories(stream),
    sourceId: sourceOf(sources, stream.name, null),
  }))
  const consumers = streams.flatMap((s) =>
    s.stream.consumers.map((consumer): AnalysedConsumer => {
      const subjects = consumerAdvisorySubjects(s.stream.name, consumer.name)
      return {
        id: `c:${s.stream.name}/${consumer.name}`,
        name: `${s.stream.name}/${consumer.name}`,
        stream: s,
        consumer,
        // On a stream that keeps advisories, the capture's consumer name marks it too (a team's stream it reads).
        lazarus: s.lazarus || isLazarus(consumer.description) || (s.keepsAdvisories && consumer.name === ownConsumer),
        keepers: { maxDeliveries: keepersOf(snapshot.streams, subjects.maxDeliveries), terminated: keepersOf(snapshot.streams, subjects.terminated) },
        sourceId: sourceOf(sources, s.stream.name, consumer.name),
      }
    }),
  )
  return { streams, consumers }
}

function ackTimesDto(consumer: SnapshotConsumer, seen: ObservedAckTimes): AckTimesDto {
  const { samples, p95Ms, maxMs, p95Share, onRedelivery } = summariseAcks(consumer, seen.samples)
  return { samples, p95Ms, maxMs, p95Share, onRedelivery, since: seen.since }
}

function streamSettings(s: SnapshotStream): JetStreamSettingDto[] {
  return [
    { key: 'subjects', value: s.subjects.length > 0 ? s.subjects.join(', ') : '(none: mirror or sources)' },
    { key: 'retention', value: s.retention },
    { key: 'storage', value: s.storage },
    { key: 'discard', value: s.discard === 'new' && s.discardNewPerSubject ? 'new (per subject)' : s.discard },
    { key: 'max_age', value: duration(s.maxAgeMs) },
    { key: 'max_msgs', value: limit(s.maxMsgs) },
    { key: 'max_bytes', value: limit(s.maxBytes) },
    { key: 'max_msgs_per_subject', value: limit(s.maxMsgsPerSubject) },
  ]
}

function consumerSettings(c: SnapshotConsumer): JetStreamSettingDto[] {
  return [
    { key: 'ack_policy', value: c.ackPolicy },
    { key: 'ack_wait', value: duration(c.ackWaitMs) },
    { key: 'max_deliver', value: c.maxDeliver <= 0 ? 'unlimited' : String(c.maxDeliver) },
    { key: 'backoff', value: c.backoffMs.length > 0 ? c.backoffMs.map(duration).join(', ') : 'unset' },
    { key: 'sample_freq', value: c.sampleFreq ?? 'unset' },
    ...(c.filterSubjects.length > 0 ? [{ key: 'filter', value: c.filterSubjects.join(', ') }] : []),
  ]
}

/**
 * Runs every JetStream rule over the account's snapshot and what Lazarus stored (pure: no I/O), and draws the graph:
 * streams, their consumers (`consumes` edges), and for each consumer the stream(s) keeping its failure advisories
 * (`advisories` edges). Nodes carry the worst severity of the findings naming them; findings come sorted by severity,
 * then key.
 */
export function diagnoseJetStream(options: {
  snapshot: JetStreamSnapshot
  evidence: JetStreamEvidence
  sources: readonly JetStreamSourceRef[]
  /** What the ack sampler observed; null when this process samples no acks (docs/jetstream.md#the-doctors-jetstream-findings). */
  ackTimes: ObservedAckTimes[] | null
  /** LAZARUS_NATS_ADVISORY_STREAM and LAZARUS_NATS_CONSUMER: Lazarus' own names on the server. */
  own: { advisoryStream: string; consumer: string }
  thresholds?: Partial<JetStreamThresholds>
  /**
   * The open findings of the run before. Without a sampler (ackTimes null) ack_wait cannot be judged: its findings stay
   * as they were, for consumers that still sample, rather than resolve on a run that did not look.
   */
  previous?: readonly DiagnosedFinding[]
}): JetStreamDiagnosis {
  const { snapshot } = options
  const { streams, consumers } = analyse(snapshot, options.sources, options.own.consumer)
  const input: JetStreamRuleInput = {
    streams,
    consumers,
    evidence: options.evidence,
    ackTimes: options.ackTimes,
    thresholds: { ...DEFAULT_JETSTREAM_THRESHOLDS, ...options.thresholds },
    now: new Date(snapshot.readAt),
    ownAdvisoryStream: options.own.advisoryStream,
  }
  const { findings, checks } = runRules(RULES, input)
  if (options.ackTimes === null) {
    const sampling = new Set(consumers.filter((c) => c.consumer.sampleFreq !== null && !c.lazarus).map((c) => c.name))
    const kept = (options.previous ?? []).filter((f) => f.kind === 'ack-wait-too-short' && f.objects.every((o) => o.type === 'consumer' && sampling.has(o.name)))
    findings.push(...kept)
    for (const c of checks) if (c.kind === 'ack-wait-too-short') c.raised += kept.length
  }
  findings.sort(worstFirst)
  const severityOf = worstSeverityByNode(findings, (o) => `${o.type === 'stream' ? 's' : 'c'}:${o.name}`)
  const observed = new Map((options.ackTimes ?? []).map((a) => [`${a.stream}/${a.consumer}`, a]))
  const nodes: TopologyNodeDto[] = [
    ...streams.map((s): TopologyNodeDto => ({
      id: s.id,
      type: 'stream',
      name: s.stream.name,
      retention: s.stream.retention,
      subjects: s.stream.subjects,
      settings: streamSettings(s.stream),
      stats: { messages: s.stream.messages, bytes: s.stream.bytes, consumers: s.stream.consumers.length, firstMessageAt: s.stream.firstMessageAt },
      keepsAdvisories: s.keepsAdvisories,
      lazarus: s.lazarus,
      sourceId: s.sourceId,
      severity: severityOf.get(s.id) ?? null,
    })),
    ...consumers.map((c): TopologyNodeDto => {
      const seen = observed.get(c.name)
      return {
        id: c.id,
        type: 'consumer',
        name: c.name,
        stream: c.stream.stream.name,
        consumer: c.consumer.name,
        settings: consumerSettings(c.consumer),
        stats: { pending: c.consumer.numPending, ackPending: c.consumer.numAckPending, redelivered: c.consumer.numRedelivered, waiting: c.consumer.numWaiting },
        ackTimes: seen && c.consumer.sampleFreq !== null ? ackTimesDto(c.consumer, seen) : null,
        lazarus: c.lazarus,
        sourceId: c.sourceId,
        severity: severityOf.get(c.id) ?? null,
      }
    }),
  ]
  nodes.sort((a, b) => (a.id < b.id ? -1 : 1))
  return { serverVersion: snapshot.serverVersion, nodes, edges: edgesOf(consumers), findings, checks }
}

/**
 * Stream → consumer, and consumer → each stream keeping its failure advisories (those of a consumer that takes acks:
 * max-deliveries ones only with max_deliver set). Lazarus' own capture consumers are left without: they would point
 * back at the stream they read.
 */
function edgesOf(consumers: readonly AnalysedConsumer[]): TopologyEdgeDto[] {
  const edges: TopologyEdgeDto[] = []
  for (const c of consumers) {
    edges.push({ id: `cs:${c.id}`, from: c.stream.id, to: c.id, kind: 'consumes', routingKey: c.consumer.filterSubjects.join(', ') || null })
    if (c.lazarus || c.consumer.ackPolicy === 'none') continue
    const kinds = new Map<string, string[]>()
    if (c.consumer.maxDeliver > 0) for (const s of c.keepers.maxDeliveries) kinds.set(s, [...(kinds.get(s) ?? []), 'max-deliveries'])
    for (const s of c.keepers.terminated) kinds.set(s, [...(kinds.get(s) ?? []), 'terminated'])
    for (const [stream, what] of kinds) edges.push({ id: `av:${c.id}>s:${stream}`, from: c.id, to: `s:${stream}`, kind: 'advisories', routingKey: what.join(', ') })
  }
  return edges
}

