import 'server-only'
import type { TopologyObjectRef } from '@/lib/shared/schemas/topology'
import { bindingClosure, exchangeId, type AnalysedGraph, type AnalysedQueue } from '../analyse-graph'
import { check, exchangeRef, finding, messagesQuery, queueList, queueRef, settingEvidence, sourceParams, type DiagnosedFinding, type RuleInput, type RuleOutput } from './rule-kit'

/*
 * Findings 2 and the dead-letter cycle of 6 (docs/topology.md#findings). The graph's edges are dead-letter flows: a
 * queue → its DLX → the queues the dead letters reach through bindings. A cycle in it is
 * - a dead-letter cycle of expiries when every queue in it expires messages and nobody consumes any of them: the
 *   broker drops a message that comes back to a queue with no rejection on the way (docs/rabbitmq.md#dead-lettering);
 * - otherwise a retry loop (work → DLX → delay → work). It needs an exit: the consumer, seeing the x-death count reach
 *   its limit, publishes the message to an exchange that leads to a terminal DLQ. Publishing is invisible to the
 *   broker, so an exit is counted when one of these holds (or, with `exitExchanges`, only when one of those exists):
 *   - an exchange of the loop itself routes some key (or its alternate exchange routes) to a DLQ outside the loop:
 *     the builder's last tier escalates that way;
 *   - an exchange that leads to a DLQ outside the loop belongs to the same application by name: it, or the DLQ, shares
 *     the loop's queues' common name stem (`orders` for `orders.work` and `orders.retry.30s`). Another application's
 *     parking exchange is no exit for this loop;
 *   - stored letters prove it: a drained DLQ holds letters whose x-death names a queue of the loop.
 */

/** The longest common prefix of the names, cut back to a separator: `orders` for `orders.work` and `orders.retry.5m`. */
function nameStem(names: string[]): string {
  let prefix = names[0] ?? ''
  for (const name of names) while (!name.startsWith(prefix)) prefix = prefix.slice(0, -1)
  const cut = Math.max(...['.', '-', '_', ':', '/'].map((s) => prefix.lastIndexOf(s)))
  if (cut > 0) return prefix.slice(0, cut)
  return names.every((n) => n === prefix) ? prefix : ''
}

const sameApplication = (stem: string, name: string) => stem !== '' && (name === stem || (name.startsWith(stem) && /^[.\-_:/]$/.test(name.charAt(stem.length))))

/** Strongly connected components of the dead-letter flow graph with a cycle in them (Tarjan). */
function cyclicComponents(graph: AnalysedGraph): AnalysedQueue[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const out: AnalysedQueue[][] = []
  let counter = 0
  const visit = (name: string) => {
    index.set(name, counter)
    low.set(name, counter++)
    stack.push(name)
    onStack.add(name)
    for (const next of graph.queues.get(name)?.deadLetterTargets ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(name, Math.min(low.get(name) as number, low.get(next) as number))
      } else if (onStack.has(next)) low.set(name, Math.min(low.get(name) as number, index.get(next) as number))
    }
    if (low.get(name) !== index.get(name)) return
    const component: string[] = []
    let member: string
    do {
      member = stack.pop() as string
      onStack.delete(member)
      component.push(member)
    } while (member !== name)
    const selfLoop = component.length === 1 && (graph.queues.get(name)?.deadLetterTargets.includes(name) ?? false)
    if (component.length > 1 || selfLoop) out.push(component.sort().map((n) => graph.queues.get(n) as AnalysedQueue))
  }
  for (const q of queueList(graph)) if (!index.has(q.queue.name)) visit(q.queue.name)
  return out
}

/** One cycle through the component, from its first queue by name: queue and DLX node ids in order. */
function cycleThrough(component: AnalysedQueue[]): string[] {
  const members = new Set(component.map((q) => q.queue.name))
  const byName = new Map(component.map((q) => [q.queue.name, q]))
  const start = component[0]
  const path: AnalysedQueue[] = []
  const seen = new Set<string>()
  const walk = (q: AnalysedQueue): boolean => {
    path.push(q)
    seen.add(q.queue.name)
    for (const next of q.deadLetterTargets) {
      if (!members.has(next)) continue
      if (next === start.queue.name) return true
      if (!seen.has(next) && walk(byName.get(next) as AnalysedQueue)) return true
    }
    path.pop()
    return false
  }
  walk(start)
  return path.flatMap((q) => [q.id, exchangeId(q.dlx as string)])
}

export function retryLoopsRule({ graph, evidence, thresholds, exitExchanges }: RuleInput): RuleOutput {
  const findings: DiagnosedFinding[] = []
  const components = cyclicComponents(graph)
  // Each exchange's DLQs, worked out once for all cycles.
  const dlqsOf = new Map<string, string[]>()
  const exchangeDlqs = (name: string) => {
    if (!dlqsOf.has(name)) dlqsOf.set(name, [...bindingClosure(graph.table, name)].filter((q) => graph.queues.get(q)?.role === 'dlq'))
    return dlqsOf.get(name) as string[]
  }
  for (const component of components) {
    const names = new Set(component.map((q) => q.queue.name))
    const cycleExchanges = new Set<string>()
    for (const q of component) {
      cycleExchanges.add(q.dlx as string)
      for (const route of q.deadLetterRoutes) if (route.result.queues.some((t) => names.has(t))) route.result.exchanges.forEach((x) => cycleExchanges.add(x))
    }
    const cycle = cycleThrough(component)
    const objects: TopologyObjectRef[] = [...component.map((q) => queueRef(q.queue.name)), ...[...cycleExchanges].sort().map(exchangeRef)]
    const settings = component.flatMap((q) => [settingEvidence(q, 'dead-letter-exchange'), settingEvidence(q, 'message-ttl')].map((e) => ({ label: `${q.queue.name}: ${e.label}`, value: e.value })))
    const consumers = component.map((q) => ({ label: `${q.queue.name}: consumers`, value: String(q.queue.consumers) }))
    const expiriesOnly = component.every((q) => q.queue.consumers === 0 && q.settings.byKey.has('message-ttl'))
    if (expiriesOnly) {
      findings.push(
        finding(graph, {
          kind: 'dead-letter-cycle-no-reject',
          severity: 'error',
          title: `Dead-letter cycle of expiries: ${component.map((q) => `"${q.queue.name}"`).join(' → ')}`,
          why: 'Messages expire from queue to queue in a cycle nobody consumes; when one comes back to a queue it already expired in, with no rejection on the way, RabbitMQ drops it.',
          fix: 'Break the cycle: point the last queue\'s dead-letter-exchange at a terminal dead-letter queue, or have a consumer take the messages off one of the queues.',
          evidence: [...settings, ...consumers],
          objects,
          cycle,
        }),
      )
      continue
    }
    const stem = nameStem([...names])
    const leadsOut = (exchange: string) => exchangeDlqs(exchange).filter((q) => !names.has(q))
    const exits = exitExchanges
      ? exitExchanges.filter((name) => graph.exchanges.has(name) && !graph.exchanges.get(name)?.missing)
      : [
          ...[...cycleExchanges].filter((x) => leadsOut(x).length > 0),
          ...[...graph.exchanges.values()]
            .filter((x) => !x.missing && x.exchange.name !== '' && !cycleExchanges.has(x.exchange.name))
            .map((x) => x.exchange.name)
            .filter((x) => sameApplication(stem, x) || leadsOut(x).some((q) => sameApplication(stem, q))),
        ].filter((x) => leadsOut(x).length > 0)
    const provenByLetters = !exitExchanges && evidence.deathQueues.some((d) => names.has(d.queue))
    if (exits.length > 0 || provenByLetters) continue
    findings.push(
      finding(graph, {
        kind: 'retry-loop-no-exit',
        severity: 'error',
        title: `Retry loop without exit: ${component.map((q) => `"${q.queue.name}"`).join(' → ')}`,
        why: 'Messages the consumer rejects go round this loop for ever: no exchange outside it leads to a terminal dead-letter queue, so a message that can never succeed never stops being retried, and never reaches anyone who could look at it.',
        fix: 'Declare a parking exchange bound to a terminal dead-letter queue (a quorum queue with max-length and overflow reject-publish), and have the consumer publish there, then ack, once the x-death count of the message reaches its retry limit.',
        evidence: [
          ...settings,
          ...consumers,
          {
            label: 'exits found',
            value: exitExchanges
              ? `none of ${exitExchanges.join(', ') || '(none given)'}`
              : `none: no exchange of the loop, and none named like it${stem ? ` ("${stem}…")` : ''}, leads to a DLQ outside it, and no stored letter came out of it`,
          },
        ],
        objects,
        cycle,
      }),
    )
  }
  const high = evidence.deathQueues.filter((d) => d.maxCount > thresholds.retryCount)
  for (const death of high) {
    findings.push(
      finding(graph, {
        kind: 'retry-count-high',
        severity: 'warning',
        title: `Stored letters went round queue "${death.queue}" up to ${death.maxCount} times`,
        why: 'x-death counts this high mean messages are retried far past any useful limit: each round costs a delay and a delivery, and the loop only ends when something drops or parks them.',
        fix: `Have the consumer of "${death.queue}" stop retrying at a limit (its x-death count) and publish to a parking exchange bound to the terminal DLQ; on a quorum queue set delivery-limit with a dead-letter-exchange.`,
        evidence: [
          { label: 'highest x-death count', value: String(death.maxCount) },
          { label: 'threshold', value: String(thresholds.retryCount) },
          { label: 'letters naming the queue', value: String(death.letters) },
        ],
        objects: [queueRef(death.queue)],
        messagesQuery: messagesQuery([...sourceParams(death.sourceIds[0]), ['death.queue', death.queue], ['death.count>', String(thresholds.retryCount + 1)]]),
      }),
    )
  }
  return {
    findings,
    checks: [
      check('retry-loop-no-exit', graph.queues.size, `${graph.queues.size} queues' dead-letter flows: ${components.length} cycles, each checked for an exit to a DLQ`, findings),
      check('dead-letter-cycle-no-reject', graph.queues.size, `${graph.queues.size} queues' dead-letter flows: cycles made only of expiries`, findings),
      check('retry-count-high', evidence.deathQueues.length, `${evidence.deathQueues.length} queues named by stored x-death entries: counts above ${thresholds.retryCount}`, findings),
    ],
  }
}
