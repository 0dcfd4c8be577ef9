import { describe, expect, it } from 'vitest'
import { OWN_STREAM_DESCRIPTION } from '@/lib/server/sources/advisory-keepers'
import { ackDeadlineMs, AckTimeWindow, parseAckMetric, p95, type ObservedAckTimes } from '@/lib/server/topology/jetstream/ack-times'
import { diagnoseJetStream } from '@/lib/server/topology/jetstream/diagnose-jetstream'
import { emptyJetStreamEvidence, type JetStreamEvidence, type JetStreamSourceRef } from '@/lib/server/topology/jetstream/jetstream-evidence'
import type { JetStreamSnapshot, SnapshotConsumer, SnapshotStream } from '@/lib/server/topology/jetstream/jetstream-snapshot'
import { limitsWithinWindow } from '@/lib/server/topology/jetstream/rules/stream-limits'
import { DEFAULT_JETSTREAM_THRESHOLDS } from '@/lib/server/topology/jetstream/rules/jetstream-kit'
import { subjectsOverlap } from '@/lib/shared/nats-subjects'
import { JETSTREAM_FINDING_KINDS } from '@/lib/shared/schemas/topology'

const NOW = new Date('2026-12-07T12:00:00Z')
const HOUR = 3_600_000
const MAX_DELIVERIES = '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES'
const TERMINATED = '$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED'

const consumer = (name: string, over: Partial<SnapshotConsumer> = {}): SnapshotConsumer => ({
  name, description: null, ackPolicy: 'explicit', ackWaitMs: 30_000, maxDeliver: 5, backoffMs: [5_000, 30_000], sampleFreq: null, filterSubjects: [],
  numPending: 0, numAckPending: 0, numRedelivered: 0, numWaiting: 0, ...over,
})
const stream = (name: string, over: Partial<SnapshotStream> = {}): SnapshotStream => ({
  name, description: null, subjects: [`${name.toLowerCase()}.>`], retention: 'limits', discard: 'old', discardNewPerSubject: false, maxAgeMs: 7 * 24 * HOUR,
  maxMsgs: -1, maxBytes: -1, maxMsgsPerSubject: -1, storage: 'file', messages: 0, bytes: 0, firstMessageAt: null, consumers: [], ...over,
})
/** A team's stream keeping every consumer's failure advisories of `streams`, two weeks. */
const keeper = (name: string, streams: string[], over: Partial<SnapshotStream> = {}) =>
  stream(name, { subjects: streams.flatMap((s) => [`${MAX_DELIVERIES}.${s}.*`, `${TERMINATED}.${s}.*`]), maxAgeMs: 14 * 24 * HOUR, ...over })

const run = (
  streams: SnapshotStream[],
  options: { evidence?: JetStreamEvidence; ackTimes?: ObservedAckTimes[] | null; sources?: JetStreamSourceRef[]; previous?: Parameters<typeof diagnoseJetStream>[0]['previous'] } = {},
) =>
  diagnoseJetStream({
    snapshot: { serverVersion: '2.9.10', readAt: NOW.toISOString(), streams } satisfies JetStreamSnapshot,
    evidence: options.evidence ?? emptyJetStreamEvidence(),
    sources: options.sources ?? [],
    ackTimes: options.ackTimes === undefined ? [] : options.ackTimes,
    own: { advisoryStream: 'LAZARUS_ADVISORIES', consumer: 'lazarus-capture' },
    previous: options.previous,
  })
const kindsOf = (d: ReturnType<typeof run>) => d.findings.map((f) => [f.kind, f.objects.map((o) => o.name)])

describe('the JetStream doctor on hand-built snapshots', () => {
  it('finds nothing in a consumer with max_deliver, backoff and kept advisories, and says what it checked', () => {
    const d = run([stream('ORDERS', { consumers: [consumer('billing')] }), keeper('FAILURES', ['ORDERS'])])
    expect(d.findings).toEqual([])
    expect(d.checks.map((c) => c.kind).sort()).toEqual([...JETSTREAM_FINDING_KINDS].sort())
    expect(d.checks.find((c) => c.kind === 'advisories-not-captured')).toMatchObject({ checked: 1, raised: 0 })
    expect(d.edges).toEqual([
      { id: 'cs:c:ORDERS/billing', from: 's:ORDERS', to: 'c:ORDERS/billing', kind: 'consumes', routingKey: null },
      { id: 'av:c:ORDERS/billing>s:FAILURES', from: 'c:ORDERS/billing', to: 's:FAILURES', kind: 'advisories', routingKey: 'max-deliveries, terminated' },
    ])
    expect(d.nodes.find((n) => n.id === 's:FAILURES')).toMatchObject({ type: 'stream', keepsAdvisories: true, severity: null })
  })

  it('finds a consumer without max_deliver, and nothing else about it', () => {
    const d = run([stream('ORDERS', { consumers: [consumer('forever', { maxDeliver: -1, backoffMs: [] })] })])
    expect(kindsOf(d)).toEqual([['no-max-deliver', ['ORDERS/forever']]])
    expect(d.findings[0].evidence).toContainEqual({ label: 'max_deliver', value: '-1 (unlimited)' })
    expect(d.nodes.find((n) => n.id === 'c:ORDERS/forever')?.severity).toBe('warning')
  })

  it('leaves consumers that take no acks alone: they never redeliver', () => {
    expect(run([stream('ORDERS', { consumers: [consumer('tail', { ackPolicy: 'none', maxDeliver: -1, backoffMs: [] })] })]).findings).toEqual([])
  })

  it('finds advisories no stream keeps, by the NATS wildcard rules', () => {
    const billing = consumer('billing')
    const kinds = (keepers: SnapshotStream[]) => run([stream('ORDERS', { consumers: [billing] }), ...keepers]).findings.map((f) => [f.kind, f.severity])
    expect(kinds([])).toEqual([['advisories-not-captured', 'error']])
    // Only max-deliveries kept: terminated failures are lost, a warning.
    expect(kinds([stream('MD', { subjects: [`${MAX_DELIVERIES}.>`] })])).toEqual([['advisories-not-captured', 'warning']])
    // `*` stands for the advisory's kind, `>` for stream and consumer.
    expect(kinds([stream('ALL', { subjects: ['$JS.EVENT.ADVISORY.CONSUMER.*.ORDERS.>'] })])).toEqual([])
    expect(kinds([stream('ALL', { subjects: ['$JS.EVENT.ADVISORY.>'] })])).toEqual([])
    // Another stream's advisories, or one consumer's, do not cover this one's.
    expect(kinds([keeper('OTHER', ['BILLING'])])).toEqual([['advisories-not-captured', 'error']])
    expect(kinds([stream('ONE', { subjects: [`${MAX_DELIVERIES}.ORDERS.shipping`, `${TERMINATED}.ORDERS.shipping`] })])).toEqual([['advisories-not-captured', 'error']])
    // Lazarus' own stream counts only where its subjects reach: narrowed to another source stream, not at all.
    const own = { description: OWN_STREAM_DESCRIPTION }
    expect(kinds([keeper('LAZARUS_ADVISORIES', ['PAYMENTS'], own)])).toEqual([['advisories-not-captured', 'error']])
    expect(kinds([keeper('LAZARUS_ADVISORIES', ['PAYMENTS', 'ORDERS'], own)])).toEqual([])
  })

  it('says the consumer has a source when its capture keeps nothing yet', () => {
    const d = run([stream('ORDERS', { consumers: [consumer('billing')] })], { sources: [{ id: '4', stream: 'ORDERS', consumer: null }] })
    expect(d.findings[0]).toMatchObject({ kind: 'advisories-not-captured', fix: expect.stringContaining('sources page') })
    expect(d.findings[0].evidence).toContainEqual({ label: 'Lazarus source', value: 'source 4' })
    expect(d.nodes.find((n) => n.id === 'c:ORDERS/billing')).toMatchObject({ sourceId: '4' })
  })

  it('judges stream limits against the 24 hour triage window', () => {
    const limits = (over: Partial<SnapshotStream>) => limitsWithinWindow(stream('ORDERS', over), DEFAULT_JETSTREAM_THRESHOLDS, NOW).map((r) => r.label)
    expect(limits({ maxAgeMs: 23 * HOUR })).toEqual(['max_age'])
    expect(limits({ maxAgeMs: 24 * HOUR })).toEqual([])
    expect(limits({ maxAgeMs: 0 })).toEqual([])
    const twoHoursOld = new Date(NOW.getTime() - 2 * HOUR).toISOString()
    const dayAndHalfOld = new Date(NOW.getTime() - 36 * HOUR).toISOString()
    // At 90% of max_msgs or max_bytes with discard old, the oldest message's age is how long any message lives.
    expect(limits({ maxMsgs: 1000, messages: 900, firstMessageAt: twoHoursOld })).toEqual(['max_msgs'])
    expect(limits({ maxMsgs: 1000, messages: 899, firstMessageAt: twoHoursOld })).toEqual([])
    expect(limits({ maxBytes: 1_000_000, bytes: 990_000, firstMessageAt: twoHoursOld })).toEqual(['max_bytes'])
    expect(limits({ maxMsgs: 1000, messages: 1000, firstMessageAt: dayAndHalfOld })).toEqual([])
    // Discard new refuses new messages instead of removing old ones.
    expect(limits({ maxMsgs: 1000, messages: 1000, firstMessageAt: twoHoursOld, discard: 'new' })).toEqual([])
    expect(limits({ maxMsgsPerSubject: 9 })).toEqual(['max_msgs_per_subject'])
    expect(limits({ maxMsgsPerSubject: 10 })).toEqual([])
    expect(limits({ maxMsgsPerSubject: 1, discard: 'new', discardNewPerSubject: true })).toEqual([])
  })

  it('finds a work stream removing failed messages (warning) and an advisory stream dropping advisories (error)', () => {
    const d = run([
      stream('ORDERS', { maxAgeMs: HOUR, consumers: [consumer('billing')] }),
      keeper('FAILURES', ['ORDERS'], { maxAgeMs: 6 * HOUR }),
      // No consumer reads it: no failed messages live there.
      stream('ARCHIVE', { maxAgeMs: HOUR }),
    ])
    expect(d.findings.map((f) => [f.kind, f.severity, f.objects[0].name])).toEqual([
      ['stream-limits-drop-failures', 'error', 'FAILURES'],
      ['stream-limits-drop-failures', 'warning', 'ORDERS'],
    ])
    expect(d.findings[1].title).toBe('Stream "ORDERS" removes failed messages within 24h (max_age)')
    expect(d.findings[1].evidence[0]).toEqual({ label: 'max_age', value: '1h: messages are removed after that, under the 24h window' })
    // A full advisory stream that discards new ones refuses the advisories.
    const full = run([stream('ORDERS', { consumers: [consumer('billing')] }), keeper('FAILURES', ['ORDERS'], { discard: 'new', maxMsgs: 100, messages: 100 })])
    expect(full.findings.map((f) => [f.kind, f.severity])).toEqual([['stream-limits-drop-failures', 'error']])
    expect(full.findings[0].evidence[0].value).toContain('new advisories are refused')
  })

  it('finds a consumer retrying without backoff, when it retries at all', () => {
    const d = run([stream('ORDERS', { consumers: [consumer('fast', { maxDeliver: 3, backoffMs: [] }), consumer('once', { maxDeliver: 1, backoffMs: [] })] }), keeper('FAILURES', ['ORDERS'])])
    expect(kindsOf(d)).toEqual([['no-backoff', ['ORDERS/fast']]])
    expect(d.findings[0].evidence).toContainEqual({ label: 'all deliveries spent within', value: '1m on ack timeouts; at once on naks without delay' })
  })

  it('judges ack_wait from sampled ack times only, against each delivery\'s deadline', () => {
    const slow = consumer('slow', { sampleFreq: '100%', ackWaitMs: 10_000, backoffMs: [] })
    const sampled = (ms: number[], deliveries = 1): ObservedAckTimes[] => [{ stream: 'ORDERS', consumer: 'slow', samples: ms.map((m) => ({ ms: m, deliveries })), since: NOW.toISOString() }]
    const found = (s: SnapshotConsumer, acks: ObservedAckTimes[] | null) =>
      run([stream('ORDERS', { consumers: [s] }), keeper('FAILURES', ['ORDERS'])], { ackTimes: acks }).findings.filter((f) => f.kind === 'ack-wait-too-short')
    // 95th percentile at 80% of ack_wait: flagged; below: not.
    expect(found(slow, sampled([...Array(18).fill(1_000), 8_000, 8_000]))).toHaveLength(1)
    expect(found(slow, sampled([...Array(19).fill(1_000), 8_000]))).toEqual([])
    expect(found(slow, sampled([7_900]))).toEqual([])
    // With a backoff, each delivery's step is its deadline: a second delivery acked after 8 s of a 20 s step is fine.
    const backedOff = { ...slow, backoffMs: [10_000, 20_000] }
    expect(found(backedOff, sampled([8_000], 1))).toHaveLength(1)
    expect(found(backedOff, sampled([8_000], 2))).toEqual([])
    // Not sampling: not judged, whatever the redelivery counts say.
    expect(found({ ...slow, sampleFreq: null, numRedelivered: 40 }, sampled([9_000]))).toEqual([])
    const d = run([stream('ORDERS', { consumers: [slow] }), keeper('FAILURES', ['ORDERS'])], { ackTimes: sampled([9_000]) })
    expect(d.findings[0].evidence).toEqual(expect.arrayContaining([{ label: 'ack time p95', value: '9.0s (90% of its deadline)' }, { label: 'acks of a redelivery', value: '0' }]))
    expect(d.nodes.find((n) => n.id === 'c:ORDERS/slow')).toMatchObject({ ackTimes: { samples: 1, p95Ms: 9_000, p95Share: 0.9, onRedelivery: 0 } })
  })

  it('keeps the last ack_wait findings when the run has no sampler, for consumers that still sample', () => {
    const slow = consumer('slow', { sampleFreq: '100%', ackWaitMs: 10_000 })
    const streams = [stream('ORDERS', { consumers: [slow] }), keeper('FAILURES', ['ORDERS'])]
    const judged = run(streams, { ackTimes: [{ stream: 'ORDERS', consumer: 'slow', samples: [{ ms: 9_500, deliveries: 1 }], since: NOW.toISOString() }] })
    expect(kindsOf(judged)).toEqual([['ack-wait-too-short', ['ORDERS/slow']]])
    const unjudged = run(streams, { ackTimes: null, previous: judged.findings })
    expect(unjudged.findings).toEqual(judged.findings)
    expect(unjudged.checks.find((c) => c.kind === 'ack-wait-too-short')).toMatchObject({ raised: 1, description: expect.stringContaining('not judged by this run') })
    expect(run([stream('ORDERS', { consumers: [{ ...slow, sampleFreq: null }] }), keeper('FAILURES', ['ORDERS'])], { ackTimes: null, previous: judged.findings }).findings).toEqual([])
  })

  it('finds terminated messages a work-queue stream removed, from what Lazarus stored', () => {
    const evidence: JetStreamEvidence = { goneTerminations: [{ stream: 'JOBS', consumer: 'worker', sourceId: '9', count: 3, newestAt: NOW.toISOString() }], window: { days: 7, lettersPerSource: 5000 } }
    const jobs = (retention: SnapshotStream['retention']) => stream('JOBS', { retention, consumers: [consumer('worker')] })
    const d = run([jobs('workqueue'), keeper('FAILURES', ['JOBS'])], { evidence })
    expect(kindsOf(d)).toEqual([['terminated-message-gone', ['JOBS/worker', 'JOBS']]])
    expect(d.findings[0]).toMatchObject({ title: 'Consumer "JOBS/worker" terminates messages its work-queue stream removes at once: 3 stored without content', messagesQuery: 'source=9&p.consumer=worker&failureKind=exhausted' })
    // A limits stream keeps terminated messages: what went missing there is the limits' doing, not +TERM's.
    expect(run([jobs('limits'), keeper('FAILURES', ['JOBS'])], { evidence }).findings).toEqual([])
  })

  it('judges none of Lazarus\' own capture consumers, and draws no advisories edge from them', () => {
    const own = { description: OWN_STREAM_DESCRIPTION, subjects: [`${MAX_DELIVERIES}.>`, `${TERMINATED}.>`], maxAgeMs: 14 * 24 * HOUR }
    const capture = consumer('lazarus-capture', { maxDeliver: -1, backoffMs: [], description: "Lazarus: stores each failure advisory's message, then acknowledges it (docs/jetstream.md)" })
    // A team's advisory stream read by Lazarus' consumer name is recognised by the name.
    const d = run([stream('LAZARUS_ADVISORIES', { ...own, consumers: [capture] }), keeper('TEAM', ['X'], { consumers: [consumer('lazarus-capture', { maxDeliver: -1, backoffMs: [] })] })])
    expect(d.findings).toEqual([])
    expect(d.edges.filter((e) => e.kind === 'advisories')).toEqual([])
    expect(d.nodes.filter((n) => n.type === 'consumer').map((n) => n.type === 'consumer' && n.lazarus)).toEqual([true, true])
  })
})

describe('ack sampling', () => {
  it('reads the server\'s metric events, and nothing else', () => {
    const event = { type: 'io.nats.jetstream.metric.v1.consumer_ack', id: 'x', timestamp: NOW.toISOString(), stream: 'ORDERS', consumer: 'billing', consumer_seq: 3, stream_seq: 1, ack_time: 1_362_833, deliveries: 2 }
    expect(parseAckMetric(new TextEncoder().encode(JSON.stringify(event)))).toEqual({ stream: 'ORDERS', consumer: 'billing', ms: 1.362833, deliveries: 2 })
    expect(parseAckMetric(new TextEncoder().encode(JSON.stringify({ ...event, type: 'io.nats.jetstream.advisory.v1.nak' })))).toBeNull()
    expect(parseAckMetric(new TextEncoder().encode('not json'))).toBeNull()
  })

  it('keeps the newest samples per consumer, within the window, for a bounded number of consumers', () => {
    const window = new AckTimeWindow({ windowMs: 60_000, perConsumer: 3, consumers: 2, now: 0 })
    for (let i = 1; i <= 5; i++) window.add({ stream: 'S', consumer: 'a', ms: i, deliveries: 1 }, i * 1_000)
    expect(window.read(10_000)).toEqual([{ stream: 'S', consumer: 'a', samples: [3, 4, 5].map((ms) => ({ ms, deliveries: 1 })), since: new Date(0).toISOString() }])
    // Older than the window: forgotten.
    expect(window.read(64_500)).toEqual([{ stream: 'S', consumer: 'a', samples: [{ ms: 5, deliveries: 1 }], since: new Date(4_500).toISOString() }])
    window.add({ stream: 'S', consumer: 'b', ms: 1, deliveries: 1 }, 6_000)
    window.add({ stream: 'S', consumer: 'a', ms: 6, deliveries: 1 }, 7_000)
    // A third consumer makes room by forgetting the one heard from least recently (b).
    window.add({ stream: 'S', consumer: 'c', ms: 1, deliveries: 1 }, 8_000)
    expect(window.read(9_000).map((o) => o.consumer)).toEqual(['a', 'c'])
  })

  it('takes each delivery\'s deadline from the backoff when there is one, and the 95th percentile by nearest rank', () => {
    expect(ackDeadlineMs({ ackWaitMs: 30_000, backoffMs: [] }, 4)).toBe(30_000)
    expect([1, 2, 3, 9].map((d) => ackDeadlineMs({ ackWaitMs: 30_000, backoffMs: [1_000, 5_000, 60_000] }, d))).toEqual([1_000, 5_000, 60_000, 60_000])
    expect(p95(Array.from({ length: 100 }, (_, i) => i + 1))).toBe(95)
    expect(p95([7])).toBe(7)
    expect(p95([])).toBe(0)
  })

  it('matches advisory subjects with NATS wildcards the way a stream keeps them', () => {
    expect(subjectsOverlap(`${MAX_DELIVERIES}.>`, `${MAX_DELIVERIES}.ORDERS.billing`)).toBe(true)
    expect(subjectsOverlap(`${MAX_DELIVERIES}.ORDERS.*`, `${MAX_DELIVERIES}.ORDERS.billing`)).toBe(true)
    expect(subjectsOverlap(`${MAX_DELIVERIES}.ORDERS`, `${MAX_DELIVERIES}.ORDERS.billing`)).toBe(false)
    expect(subjectsOverlap('$JS.EVENT.ADVISORY.CONSUMER.*.*.billing', `${TERMINATED}.ORDERS.billing`)).toBe(true)
    expect(subjectsOverlap(`${TERMINATED}.>`, `${MAX_DELIVERIES}.ORDERS.billing`)).toBe(false)
  })
})
