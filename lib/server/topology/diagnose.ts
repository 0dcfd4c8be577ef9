import 'server-only'
import type { TopologyCheckDto, TopologyEdgeDto, TopologyNodeDto } from '@/lib/shared/schemas/topology'
import { analyseGraph } from './analyse-graph'
import type { BrokerSnapshot } from './broker-snapshot'
import { brokerSemanticsRule } from './rules/broker-semantics'
import { deadLetterRoutingRule } from './rules/dead-letter-routing'
import { delayQueuesRule } from './rules/delay-queues'
import { dlqGrowthRule } from './rules/dlq-growth'
import { requeueToHeadRule } from './rules/requeue-to-head'
import { retryLoopsRule } from './rules/retry-loops'
import { DEFAULT_THRESHOLDS, runRules, worstFirst, worstSeverityByNode, type DiagnosedFinding, type DoctorThresholds, type RuleInput, type RuleOutput } from './rules/rule-kit'
import { unseenQueuesRule } from './rules/unseen-queues'
import type { TopologyEvidence } from './topology-evidence'

export type { DiagnosedFinding, DoctorThresholds } from './rules/rule-kit'
export { focusOnQueue } from './focus-on-queue'

export type Diagnosis = {
  vhost: string
  brokerVersion: string
  nodes: TopologyNodeDto[]
  edges: TopologyEdgeDto[]
  findings: DiagnosedFinding[]
  checks: TopologyCheckDto[]
}

const RULES: ((input: RuleInput) => RuleOutput)[] = [
  deadLetterRoutingRule,
  retryLoopsRule,
  delayQueuesRule,
  requeueToHeadRule,
  dlqGrowthRule,
  brokerSemanticsRule,
  unseenQueuesRule,
]

/**
 * Runs every rule over one vhost's snapshot and stored evidence (pure: no I/O). Nodes carry the worst severity of the
 * findings naming them; findings come sorted by severity, then key.
 */
export function diagnose(options: {
  snapshot: BrokerSnapshot
  evidence: TopologyEvidence
  sources: { id: string; queue: string }[]
  thresholds?: Partial<DoctorThresholds>
  /** Exchanges that count as a retry loop's exit, instead of the heuristic (docs/topology.md#findings). */
  exitExchanges?: string[]
}): Diagnosis {
  const storedKeys = new Map(options.evidence.routingKeys.map((r) => [r.queue, r.keys]))
  const graph = analyseGraph({ snapshot: options.snapshot, sources: options.sources, storedKeys })
  const input: RuleInput = { graph, evidence: options.evidence, thresholds: { ...DEFAULT_THRESHOLDS, ...options.thresholds }, exitExchanges: options.exitExchanges }
  const { findings, checks } = runRules(RULES, input)
  findings.sort(worstFirst)
  const severityOf = worstSeverityByNode(findings, (o) => `${o.type === 'queue' ? 'q' : o.type === 'exchange' ? 'x' : 'p'}:${o.name}`)
  const nodes: TopologyNodeDto[] = []
  for (const q of graph.queues.values()) {
    nodes.push({
      id: q.id,
      type: 'queue',
      name: q.queue.name,
      queueType: q.queue.type,
      role: q.role,
      settings: q.settings.list,
      stats: {
        messages: q.queue.messages,
        consumers: q.queue.consumers,
        publishRate: q.queue.rates.publish,
        deliverRate: q.queue.rates.deliverGet,
        redeliverRate: q.queue.rates.redeliver,
        ackRate: q.queue.rates.ack,
      },
      sourceId: q.sourceId,
      severity: severityOf.get(q.id) ?? null,
    })
  }
  const referenced = new Set(graph.edges.flatMap((e) => [e.from, e.to]))
  for (const x of graph.exchanges.values()) {
    // The broker's predeclared exchanges (the default one, amq.*) only when something uses them.
    const predeclared = x.exchange.name === '' || x.exchange.name.startsWith('amq.')
    if (predeclared && !referenced.has(x.id)) continue
    nodes.push({
      id: x.id,
      type: 'exchange',
      name: x.exchange.name,
      exchangeType: x.exchange.type,
      alternateExchange: x.alternate?.value === null || x.alternate === null ? null : String(x.alternate.value),
      internal: x.exchange.internal,
      severity: severityOf.get(x.id) ?? null,
    })
  }
  nodes.sort((a, b) => (a.id < b.id ? -1 : 1))
  return { vhost: graph.vhost, brokerVersion: graph.brokerVersion, nodes, edges: graph.edges, findings, checks }
}
