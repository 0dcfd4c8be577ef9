import 'server-only'
import { check, finding, hasSetting, queueList, queueRef, settingEvidence, statsEvidence, type DiagnosedFinding, type RuleInput, type RuleOutput } from './rule-kit'

/*
 * Finding 5 and the DLQ TTL trap of 6 (docs/topology.md#findings): a terminal DLQ grows until something stops it. With
 * no length limit that something is the broker's memory or disk alarm, which blocks every publisher; a classic queue
 * holds it in memory where a quorum queue or a stream would keep it on disk. A DLQ with a message TTL and no DLX of its
 * own deletes its dead letters when they expire.
 */
export function dlqGrowthRule({ graph }: RuleInput): RuleOutput {
  const findings: DiagnosedFinding[] = []
  const dlqs = queueList(graph).filter((q) => q.role === 'dlq')
  for (const q of dlqs) {
    if (!hasSetting(q, 'max-length') && !hasSetting(q, 'max-length-bytes')) {
      const growth = (q.queue.rates.publish ?? 0) - (q.queue.rates.deliverGet ?? 0)
      findings.push(
        finding(graph, {
          kind: 'dlq-unbounded',
          severity: 'warning',
          title: `Dead-letter queue "${q.queue.name}" has no length limit`,
          why: `Nothing bounds it: when nobody drains it, it grows until the broker's memory or disk alarm blocks every publisher on the broker.${q.queue.type === 'classic' ? ' As a classic queue it holds its messages in memory, where a quorum queue or a stream would keep them on disk.' : ''}`,
          fix: `Set max-length (or max-length-bytes) with overflow reject-publish on "${q.queue.name}" by policy, so a full DLQ pushes back instead of dropping${q.queue.type === 'classic' ? ', and make it a quorum queue' : ''}; let Lazarus drain it.`,
          evidence: [
            ...statsEvidence(q),
            { label: 'growth', value: `${growth.toFixed(2)}/s` },
            { label: 'type', value: q.queue.type },
            { label: 'drained by Lazarus', value: q.sourceId === null ? 'no' : `source ${q.sourceId}` },
            settingEvidence(q, 'max-length'),
            settingEvidence(q, 'max-length-bytes'),
          ],
          objects: [queueRef(q.queue.name)],
        }),
      )
    }
    if (hasSetting(q, 'message-ttl') && q.dlx === null) {
      findings.push(
        finding(graph, {
          kind: 'dlq-ttl-no-dlx',
          severity: 'error',
          title: `Dead-letter queue "${q.queue.name}" expires its messages with nowhere to send them`,
          why: 'A message TTL on a DLQ without a dead-letter exchange of its own deletes each dead letter when it expires: the last copy of a failed message disappears silently.',
          fix: `Remove message-ttl from "${q.queue.name}" (argument x-message-ttl or the policy setting it), or give it a dead-letter-exchange leading to a queue that keeps them.`,
          evidence: [settingEvidence(q, 'message-ttl'), settingEvidence(q, 'dead-letter-exchange')],
          objects: [queueRef(q.queue.name)],
        }),
      )
    }
  }
  return {
    findings,
    checks: [
      check('dlq-unbounded', dlqs.length, `${dlqs.length} dead-letter queues: a max-length or max-length-bytes`, findings),
      check('dlq-ttl-no-dlx', dlqs.length, `${dlqs.length} dead-letter queues: no message-ttl without a dead-letter-exchange`, findings),
    ],
  }
}
