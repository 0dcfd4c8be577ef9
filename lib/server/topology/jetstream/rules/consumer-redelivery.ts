import 'server-only'
import { check, type DiagnosedFinding, type RuleOutput } from '../../rules/rule-kit'
import { summariseAcks } from '../ack-times'
import { consumerRef, duration, judgedConsumers, jetStreamFinding, maxDeliverText, measured, sourceText, type AnalysedConsumer, type JetStreamRuleInput } from './jetstream-kit'

/*
 * How a consumer delivers a failing message again (docs/jetstream.md#the-doctors-jetstream-findings): forever without
 * max_deliver, too fast without backoff, and for no failure at all when its handler takes longer than ack_wait.
 */

const ackEvidence = (c: AnalysedConsumer) => [
  { label: 'max_deliver', value: maxDeliverText(c.consumer) },
  { label: 'ack_wait', value: duration(c.consumer.ackWaitMs) },
  { label: 'backoff', value: c.consumer.backoffMs.length > 0 ? c.consumer.backoffMs.map(duration).join(', ') : 'unset' },
  { label: 'redelivered now (num_redelivered)', value: String(c.consumer.numRedelivered) },
  { label: 'Lazarus source', value: sourceText(c.sourceId) },
]

/** no-max-deliver: with max_deliver unlimited, a poison message is delivered again for ever and never becomes a failure. */
export function noMaxDeliverRule({ consumers }: JetStreamRuleInput): RuleOutput {
  const judged = judgedConsumers(consumers)
  const findings: DiagnosedFinding[] = judged
    .filter((c) => c.consumer.maxDeliver <= 0)
    .map((c) =>
      jetStreamFinding({
        kind: 'no-max-deliver',
        severity: 'warning',
        title: `Consumer "${c.name}" delivers a failing message again for ever (no max_deliver)`,
        why: `With max_deliver unlimited, a message the handler cannot process comes back after every nak or ack timeout, without end: the server never gives up on it, so it never publishes a max-deliveries advisory and Lazarus never captures it, while it keeps taking the handler's time and one of the consumer's ${c.consumer.ackPolicy === 'explicit' ? 'max_ack_pending slots' : 'deliveries'}.`,
        fix: `Set max_deliver on consumer "${c.consumer.name}" of stream "${c.stream.stream.name}" (for example 5, with a backoff), so the server gives up on a poison message and publishes its max-deliveries advisory for Lazarus to capture. max_deliver and backoff are part of the consumer's configuration: update it, no need to recreate it.`,
        evidence: ackEvidence(c),
        objects: [consumerRef(c.name)],
      }),
    )
  return { findings, checks: [check('no-max-deliver', judged.length, `${judged.length} consumers that take acks: a max_deliver`, findings)] }
}

/** no-backoff: every redelivery comes after ack_wait (a nak at once), so a short outage exhausts max_deliver. */
export function noBackoffRule({ consumers }: JetStreamRuleInput): RuleOutput {
  const judged = judgedConsumers(consumers).filter((c) => c.consumer.maxDeliver > 1)
  const findings: DiagnosedFinding[] = judged
    .filter((c) => c.consumer.backoffMs.length === 0)
    .map((c) => {
      const spent = (c.consumer.maxDeliver - 1) * c.consumer.ackWaitMs
      return jetStreamFinding({
        kind: 'no-backoff',
        severity: 'warning',
        title: `Consumer "${c.name}" retries ${c.consumer.maxDeliver} times without backoff`,
        why: `Without backoff a message whose ack timed out comes back after ack_wait (${duration(c.consumer.ackWaitMs)}) every time, and one the handler naks without a delay comes back at once: all ${c.consumer.maxDeliver} deliveries are spent within about ${measured(spent)} (moments, for naks), so a dependency that is down for a few minutes turns every message it touches into a failure.`,
        fix: `Set backoff on consumer "${c.consumer.name}" of stream "${c.stream.stream.name}", for example 5s, 30s, 2m (fewer steps than max_deliver: the server waits each in turn after an ack timeout, then the last one), and nak with a delay in the handler (msg.nak(delay)).`,
        evidence: [...ackEvidence(c), { label: 'all deliveries spent within', value: `${measured(spent)} on ack timeouts; at once on naks without delay` }],
        objects: [consumerRef(c.name)],
      })
    })
  return { findings, checks: [check('no-backoff', judged.length, `${judged.length} consumers with max_deliver above 1: a backoff`, findings)] }
}

/**
 * ack-wait-too-short: the consumer's sampled acks (JetStream's ack sampling, ack-times.ts) take about as long as their
 * deadline (ack_wait, or the backoff's step), so the server delivers such messages again while the handler still works
 * on them. The server restarts its clock when the deadline passes, so a handler slower than that shows as ack times near
 * it and as acks of redeliveries, never as longer ones. A consumer that samples nothing is not judged: redelivery counts
 * alone cannot tell a slow handler from a failing one, so they are shown as evidence only.
 */
export function ackWaitRule({ consumers, ackTimes, thresholds }: JetStreamRuleInput): RuleOutput {
  const judged = judgedConsumers(consumers)
  const sampling = judged.filter((c) => c.consumer.sampleFreq !== null)
  const observed = new Map((ackTimes ?? []).map((a) => [`${a.stream}\u0000${a.consumer}`, a]))
  const findings: DiagnosedFinding[] = []
  let sampled = 0
  for (const c of sampling) {
    const seen = observed.get(`${c.stream.stream.name}\u0000${c.consumer.name}`)
    if (!seen) continue
    sampled++
    const acks = summariseAcks(c.consumer, seen.samples)
    if (acks.p95Share < thresholds.ackWaitRatio && acks.maxShare <= 1) continue
    const deadline = c.consumer.backoffMs.length > 0 ? `its backoff (${c.consumer.backoffMs.map(duration).join(', ')}), which replaces ack_wait` : `ack_wait (${duration(c.consumer.ackWaitMs)})`
    const suggested = Math.max(1_000, Math.ceil((acks.maxMs * 2) / 1_000) * 1_000)
    findings.push(
      jetStreamFinding({
        kind: 'ack-wait-too-short',
        severity: 'warning',
        title: `Consumer "${c.name}"'s handler takes about as long as ${c.consumer.backoffMs.length > 0 ? 'its backoff steps' : `its ack_wait of ${duration(c.consumer.ackWaitMs)}`} (p95 ${measured(acks.p95Ms)})`,
        why: `When no ack arrives within ${deadline} the server delivers the message again, although the handler has not failed: the message is handled twice or more, every extra delivery counts towards max_deliver, and a message that is only slow can end as max-delivered. The doctor flags sampled ack times whose 95th percentile reaches ${Math.round(thresholds.ackWaitRatio * 100)}% of that deadline.`,
        fix: `Raise ${c.consumer.backoffMs.length > 0 ? 'the backoff\'s steps' : 'ack_wait'} on consumer "${c.consumer.name}" of stream "${c.stream.stream.name}" well above the slowest handling (${duration(suggested)} or more for what was sampled), or have the handler report progress while it works (msg.working(), an in-progress ack), which restarts the clock.`,
        evidence: [
          { label: 'ack_wait', value: duration(c.consumer.ackWaitMs) },
          { label: 'backoff', value: c.consumer.backoffMs.length > 0 ? c.consumer.backoffMs.map(duration).join(', ') : 'unset' },
          { label: 'sample_freq', value: c.consumer.sampleFreq ?? 'unset' },
          { label: 'sampled acks', value: `${acks.samples} since ${seen.since}` },
          { label: 'ack time p95', value: `${measured(acks.p95Ms)} (${Math.round(acks.p95Share * 100)}% of its deadline)` },
          { label: 'ack time max', value: measured(acks.maxMs) },
          { label: 'acks of a redelivery', value: String(acks.onRedelivery) },
          { label: 'redelivered now (num_redelivered)', value: String(c.consumer.numRedelivered) },
          { label: 'Lazarus source', value: sourceText(c.sourceId) },
        ],
        objects: [consumerRef(c.name)],
      }),
    )
  }
  const description =
    ackTimes === null
      ? `${sampling.length} consumers sample their acks (sample_freq): not judged by this run, whose process samples no acks`
      : `${sampling.length} of ${judged.length} consumers sample their acks (sample_freq), ${sampled} seen acking lately: ack times under ${Math.round(thresholds.ackWaitRatio * 100)}% of ack_wait (95th percentile)`
  return { findings, checks: [check('ack-wait-too-short', sampled, description, findings)] }
}
