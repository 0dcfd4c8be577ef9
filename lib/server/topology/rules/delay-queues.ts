import 'server-only'
import { check, finding, messagesQuery, queueList, queueRef, settingEvidence, sourceParams, type DiagnosedFinding, type RuleInput, type RuleOutput } from './rule-kit'

/*
 * Findings 3 (docs/topology.md#findings): head-of-line TTL blocking. RabbitMQ expires a message only when it reaches
 * the head of its queue, so in a delay queue holding different per-message TTLs a short one waits behind a long one
 * (docs/rabbitmq.md#dead-lettering). Seen in stored letters (distinct `original-expiration` values of the queue's
 * `expired` x-death entries) or in an opt-in sample; and statically, a delay queue with no queue-level TTL depends on
 * every publisher setting one per message.
 */
export function delayQueuesRule({ graph, evidence }: RuleInput): RuleOutput {
  const findings: DiagnosedFinding[] = []
  const delays = queueList(graph).filter((q) => q.role === 'delay')
  for (const q of delays) {
    if (q.settings.byKey.has('message-ttl')) continue
    findings.push(
      finding(graph, {
        kind: 'delay-no-queue-ttl',
        severity: 'warning',
        title: `Delay queue "${q.queue.name}" has no queue-level TTL`,
        why: 'Without message-ttl on the queue, each message waits as long as its own expiration says, and only at the head of the queue: one message with a long TTL (or none) holds back every message behind it.',
        fix: `Set message-ttl on "${q.queue.name}" (argument x-message-ttl, or a policy), one delay queue per retry delay, and stop setting per-message expirations.`,
        evidence: [settingEvidence(q, 'message-ttl'), settingEvidence(q, 'dead-letter-exchange'), { label: 'consumers', value: String(q.queue.consumers) }],
        objects: [queueRef(q.queue.name)],
      }),
    )
  }
  const sampled = new Map(evidence.samples.map((s) => [s.queue, s.expirations]))
  const examined = new Set<string>()
  for (const q of queueList(graph)) {
    const death = evidence.deathQueues.find((d) => d.queue === q.queue.name)
    const stored = death?.expirations ?? []
    const sample = [...new Set((sampled.get(q.queue.name) ?? []).map((e) => e ?? 'none'))].sort()
    if (death || sampled.has(q.queue.name)) examined.add(q.queue.name)
    const mixed = stored.length > 1 ? stored : sample.length > 1 ? sample : null
    if (!mixed) continue
    findings.push(
      finding(graph, {
        kind: 'delay-mixed-ttl',
        severity: 'warning',
        title: `Queue "${q.queue.name}" holds messages with ${mixed.length} different per-message TTLs`,
        why: 'Messages expire only at the head of the queue, so a message with a short TTL waits behind one with a longer TTL: retries come late, in bursts, and out of order.',
        fix: `Use one delay queue per delay, each with a queue-level message-ttl (x-message-ttl), and route each retry to the queue of its delay instead of setting an expiration per message on "${q.queue.name}".`,
        evidence: [
          ...(stored.length > 1 ? [{ label: 'original-expiration values in stored letters (ms)', value: stored.join(', ') }] : []),
          ...(sample.length > 1 ? [{ label: 'expirations in a sample of the queue', value: sample.join(', ') }] : []),
          settingEvidence(q, 'message-ttl'),
        ],
        objects: [queueRef(q.queue.name)],
        messagesQuery: stored.length > 1 ? messagesQuery([...sourceParams(death?.sourceIds[0]), ['death.queue', q.queue.name], ['death.reason', 'expired']]) : null,
      }),
    )
  }
  return {
    findings,
    checks: [
      check('delay-no-queue-ttl', delays.length, `${delays.length} delay queues: a queue-level message-ttl`, findings),
      check('delay-mixed-ttl', examined.size, `${examined.size} queues with stored x-death entries or a sample: one per-message TTL at most`, findings),
    ],
  }
}
