import 'server-only'
import { check, finding, messagesQuery, queueRef, sourceParams, type DiagnosedFinding, type RuleInput, type RuleOutput } from './rule-kit'

/*
 * Finding 7 (docs/topology.md#findings): a source's letters name, in x-death, queues that are not in this vhost
 * (another vhost, or a queue deleted since). The doctor says so instead of guessing how they got there.
 */
export function unseenQueuesRule({ graph, evidence }: RuleInput): RuleOutput {
  const findings: DiagnosedFinding[] = []
  for (const source of evidence.sources) {
    const unseen = source.deathQueues.filter((name) => !graph.queues.has(name))
    if (unseen.length === 0) continue
    findings.push(
      finding(graph, {
        kind: 'unknown-x-death-queue',
        severity: 'info',
        title: `Letters drained from "${source.queue}" died in queues the doctor cannot see: ${unseen.map((n) => `"${n}"`).join(', ')}`,
        why: `Their x-death names queues that are not in vhost "${graph.vhost}" (another vhost, or deleted): the doctor cannot check how those queues dead-letter, so traps there go unseen.`,
        fix: `Add the vhost of ${unseen.length === 1 ? 'that queue' : 'those queues'} to the doctor's vhosts (LAZARUS_TOPOLOGY_VHOSTS), or, if deleted, ignore this once the letters are handled.`,
        evidence: [
          { label: 'queues not found', value: unseen.join(', ') },
          { label: 'letters read', value: String(source.letters) },
        ],
        objects: [queueRef(source.queue), ...unseen.map(queueRef)],
        messagesQuery: messagesQuery([...sourceParams(source.sourceId), ['death.queue', unseen[0]]]),
      }),
    )
  }
  return {
    findings,
    checks: [check('unknown-x-death-queue', evidence.sources.length, `${evidence.sources.length} sources' stored letters: every queue named in x-death is in the vhost`, findings)],
  }
}
