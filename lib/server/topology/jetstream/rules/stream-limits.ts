import 'server-only'
import { check, type DiagnosedFinding, type RuleOutput } from '../../rules/rule-kit'
import type { SnapshotStream } from '../jetstream-snapshot'
import { duration, judgedConsumers, jetStreamFinding, limit, measured, sourceText, streamRef, type AnalysedStream, type JetStreamRuleInput, type JetStreamThresholds } from './jetstream-kit'

/*
 * stream-limits-drop-failures (docs/jetstream.md#the-doctors-jetstream-findings): a failed message stays in its stream
 * until the stream's limits remove it, and Lazarus reads it back by sequence when it captures the advisory; an advisory
 * stays in the stream that keeps it until that stream's limits remove it. Limits that remove either within the triage
 * window (24 hours) lose a failure whenever the capture is down for a night.
 */

/** Why a stream's limits remove messages within the window: one line per limit, empty when none does. */
export function limitsWithinWindow(stream: SnapshotStream, { triageWindowMs, fullRatio, perSubjectMin }: JetStreamThresholds, now: Date): { label: string; value: string }[] {
  const reasons: { label: string; value: string }[] = []
  const window = duration(triageWindowMs)
  if (stream.maxAgeMs > 0 && stream.maxAgeMs < triageWindowMs) reasons.push({ label: 'max_age', value: `${duration(stream.maxAgeMs)}: messages are removed after that, under the ${window} window` })
  const oldestMs = stream.firstMessageAt === null ? null : now.getTime() - new Date(stream.firstMessageAt).getTime()
  const full = (used: number, max: number) => max > 0 && used >= fullRatio * max
  const atLimit = [
    full(stream.messages, stream.maxMsgs) && { label: 'max_msgs', value: `${stream.messages} of ${limit(stream.maxMsgs)} messages` },
    full(stream.bytes, stream.maxBytes) && { label: 'max_bytes', value: `${stream.bytes} of ${limit(stream.maxBytes)} bytes` },
  ].filter((r): r is { label: string; value: string } => r !== false)
  if (stream.discard === 'old' && oldestMs !== null && oldestMs < triageWindowMs) {
    // Full, discarding the oldest: the oldest message's age is how long any message lives now.
    for (const r of atLimit) reasons.push({ label: r.label, value: `${r.value} with discard old: the oldest message is ${measured(oldestMs)} old, so a message lives about that long` })
  }
  if (stream.maxMsgsPerSubject > 0 && stream.maxMsgsPerSubject < perSubjectMin && !(stream.discard === 'new' && stream.discardNewPerSubject)) {
    reasons.push({ label: 'max_msgs_per_subject', value: `${stream.maxMsgsPerSubject}: a message is removed once ${stream.maxMsgsPerSubject} newer ones share its subject (under ${perSubjectMin})` })
  }
  return reasons
}

/** A stream keeping advisories refuses new ones when full with discard new: the server drops a failure's only trace. */
function refusesAdvisories(stream: SnapshotStream, { fullRatio }: JetStreamThresholds): { label: string; value: string }[] {
  if (stream.discard !== 'new') return []
  const full = (used: number, max: number) => max > 0 && used >= fullRatio * max
  return [
    full(stream.messages, stream.maxMsgs) && { label: 'max_msgs', value: `${stream.messages} of ${limit(stream.maxMsgs)} with discard new: new advisories are refused` },
    full(stream.bytes, stream.maxBytes) && { label: 'max_bytes', value: `${stream.bytes} of ${limit(stream.maxBytes)} bytes with discard new: new advisories are refused` },
  ].filter((r): r is { label: string; value: string } => r !== false)
}

const configEvidence = (s: SnapshotStream) => [
  { label: 'retention', value: s.retention },
  { label: 'discard', value: s.discard },
  { label: 'limits', value: `max_age ${duration(s.maxAgeMs)}, max_msgs ${limit(s.maxMsgs)}, max_bytes ${limit(s.maxBytes)}, max_msgs_per_subject ${limit(s.maxMsgsPerSubject)}` },
]

function workStreamFinding(s: AnalysedStream, reasons: { label: string; value: string }[], thresholds: JetStreamThresholds): DiagnosedFinding {
  const name = s.stream.name
  return jetStreamFinding({
    kind: 'stream-limits-drop-failures',
    severity: 'warning',
    title: `Stream "${name}" removes failed messages within ${duration(thresholds.triageWindowMs)} (${reasons.map((r) => r.label).join(', ')})`,
    why: `A failed message stays in its stream only until the stream's limits remove it; Lazarus reads it back by sequence when it captures the failure. With these limits, a capture that is down for a night (the doctor's window is ${duration(thresholds.triageWindowMs)}), or a team reading failures by hand, finds the message gone: only a record of its advisory is stored, flagged message-gone, without subject, headers or data.`,
    fix: `Give stream "${name}" limits that keep a message at least ${duration(thresholds.triageWindowMs)}: max_age of a few days (7d is usual), max_msgs and max_bytes sized for that much traffic, and no per-subject limit below ${thresholds.perSubjectMin}. Check that Lazarus captures this stream's consumers, so failures are stored as they happen.`,
    evidence: [...reasons, ...configEvidence(s.stream), { label: 'Lazarus source', value: sourceText(s.sourceId) }],
    objects: [streamRef(name)],
  })
}

function advisoryStreamFinding(s: AnalysedStream, reasons: { label: string; value: string }[], thresholds: JetStreamThresholds): DiagnosedFinding {
  const name = s.stream.name
  return jetStreamFinding({
    kind: 'stream-limits-drop-failures',
    severity: 'error',
    title: `Advisory stream "${name}" drops failure advisories before they are captured (${reasons.map((r) => r.label).join(', ')})`,
    why: `The stream keeps consumers' failure advisories until someone captures them. An advisory removed before that (or refused when the stream is full with discard new) leaves no trace of its failure at all: not even a message-gone record. The doctor's window is ${duration(thresholds.triageWindowMs)}: a capture down for a night must find every advisory when it comes back.`,
    fix: `Give stream "${name}" a max_age of at least ${duration(thresholds.triageWindowMs)} (Lazarus' own keeps 14 days), discard old, and max_msgs or max_bytes sized for that many advisories (about 300 bytes each), or none.`,
    evidence: [...reasons, ...configEvidence(s.stream), { label: 'Lazarus created it', value: s.lazarus ? 'yes' : 'no' }],
    objects: [streamRef(name)],
  })
}

/**
 * Streams holding failed messages (a consumer that takes acks reads them) and streams keeping advisories; an advisory
 * stream is judged as such (a lost advisory is a lost failure: error), the others as work streams (warning).
 */
export function streamLimitsRule({ streams, consumers, thresholds, now }: JetStreamRuleInput): RuleOutput {
  const withFailures = new Set(judgedConsumers(consumers).map((c) => c.stream.stream.name))
  const judged = streams.filter((s) => s.keepsAdvisories || withFailures.has(s.stream.name))
  const findings: DiagnosedFinding[] = []
  for (const s of judged) {
    if (s.keepsAdvisories) {
      const reasons = [...limitsWithinWindow(s.stream, thresholds, now), ...refusesAdvisories(s.stream, thresholds)]
      if (reasons.length > 0) findings.push(advisoryStreamFinding(s, reasons, thresholds))
    } else {
      const reasons = limitsWithinWindow(s.stream, thresholds, now)
      if (reasons.length > 0) findings.push(workStreamFinding(s, reasons, thresholds))
    }
  }
  return {
    findings,
    checks: [
      check(
        'stream-limits-drop-failures',
        judged.length,
        `${judged.length} streams holding failed messages or advisories: max_age, max_msgs, max_bytes and per-subject limits keep them ${duration(thresholds.triageWindowMs)} or more`,
        findings,
      ),
    ],
  }
}
