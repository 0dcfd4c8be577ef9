import 'server-only'
import { check, finding, queueList, queueRef, statsEvidence, type DiagnosedFinding, type RuleInput, type RuleOutput } from './rule-kit'

/*
 * Finding 4 (docs/topology.md#findings): a consumer that nacks with requeue=true puts the message back at the head of
 * the queue, where it is delivered again at once: the queue spins on it, nothing dead-letters, and the messages
 * behind it wait. Seen in the management API's rates: redeliveries high while acks stay near zero.
 */
export function requeueToHeadRule({ graph, thresholds }: RuleInput): RuleOutput {
  const findings: DiagnosedFinding[] = []
  const sampled = queueList(graph).filter((q) => q.queue.rates.redeliver !== null)
  for (const q of sampled) {
    const redeliver = q.queue.rates.redeliver ?? 0
    const ack = q.queue.rates.ack ?? 0
    if (redeliver < thresholds.requeueRedeliverRate || ack > redeliver * thresholds.requeueAckRatio) continue
    findings.push(
      finding(graph, {
        kind: 'requeue-to-head',
        severity: 'error',
        title: `Queue "${q.queue.name}" redelivers ${redeliver.toFixed(1)} messages a second and acks ${ack.toFixed(1)}`,
        why: 'A consumer rejecting with requeue=true puts the message back at the head of the queue and gets it again at once: it never dead-letters, never succeeds, and holds up the messages behind it.',
        fix: `Have the consumer of "${q.queue.name}" reject with requeue=false (basic.nack/basic.reject requeue=false) so the message dead-letters to a delay queue${q.dlx === null ? ' — and set a dead-letter-exchange on the queue, which has none' : ''}; on a quorum queue, a delivery-limit with a dead-letter-exchange also ends the spin.`,
        evidence: statsEvidence(q),
        objects: [queueRef(q.queue.name)],
      }),
    )
  }
  return {
    findings,
    checks: [check('requeue-to-head', sampled.length, `${sampled.length} queues with message rates: redeliveries at least ${thresholds.requeueRedeliverRate}/s with acks under ${thresholds.requeueAckRatio * 100}% of them`, findings)],
  }
}
