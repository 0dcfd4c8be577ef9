import 'server-only'
import { bindingClosure } from '../analyse-graph'
import { routesAnyKey } from '../routing'
import { check, exchangeLabel, exchangeRef, finding, queueList, queueRef, settingEvidence, type DiagnosedFinding, type RuleInput, type RuleOutput } from './rule-kit'

/*
 * Findings 1 (docs/topology.md#findings): dead letters the broker cannot route. A queue's dead letters go to its DLX
 * with the dead-letter routing key, or with the keys they were published with; if the DLX does not exist, or nothing
 * bound to it (through exchange-to-exchange bindings and alternate exchanges) matches, the broker drops them silently
 * (docs/rabbitmq.md#dead-lettering). Keys only the messages know are taken from stored letters when there are any.
 */
export function deadLetterRoutingRule({ graph }: RuleInput): RuleOutput {
  const findings: DiagnosedFinding[] = []
  const withDlx = queueList(graph).filter((q) => q.dlx !== null)
  for (const q of withDlx) {
    const dlx = q.dlx as string
    const objects = [queueRef(q.queue.name), exchangeRef(dlx)]
    const base = [settingEvidence(q, 'dead-letter-exchange'), settingEvidence(q, 'dead-letter-routing-key')]
    if (graph.exchanges.get(dlx)?.missing) {
      findings.push(
        finding(graph, {
          kind: 'dlx-missing',
          severity: 'error',
          title: `Queue "${q.queue.name}" dead-letters to exchange "${dlx}", which does not exist`,
          why: 'RabbitMQ drops a dead letter whose dead-letter exchange does not exist, without a trace: every message this queue rejects, expires or overflows is lost.',
          fix: `Declare exchange "${dlx}" and bind the dead-letter queue to it, or point dead-letter-exchange at an exchange that exists.`,
          evidence: base,
          objects,
        }),
      )
      continue
    }
    const routes = q.deadLetterRoutes
    const indeterminate = routes.some((r) => r.result.indeterminate)
    const unrouted = routes.filter((r) => !r.result.indeterminate && r.result.missingExchanges.length === 0 && (r.pattern ? r.none : r.result.queues.length === 0))
    const partly = routes.filter((r) => r.pattern && r.partial && !r.none)
    const missingAlternates = [...new Set(routes.flatMap((r) => r.result.missingExchanges))]
    const anyKey = routesAnyKey({ table: graph.table, exchange: dlx })
    const evidence = [
      ...base,
      {
        label: 'dead-letter keys',
        value: [...q.deadLetterKeys.keys.map((k) => JSON.stringify(k)), ...q.deadLetterKeys.patterns.map((p) => `keys matching ${JSON.stringify(p)}`), ...(q.deadLetterKeys.known ? [] : ['keys only publishers know'])].join(', ') || 'none',
      },
      ...routes.map((r) => ({
        label: `${r.pattern ? 'keys matching ' : ''}${JSON.stringify(r.key)} route to`,
        value: r.result.indeterminate ? 'depends on the message' : `${r.result.queues.join(', ') || 'nothing'}${r.partial && !r.none ? ' (some keys: nothing)' : ''}`,
      })),
    ]
    // With keys nobody knows, a DLX whose bindings lead nowhere still drops every one of them.
    const leadsNowhere = dlx !== '' && !indeterminate && bindingClosure(graph.table, dlx).size === 0
    const unroutable = unrouted.length > 0 || missingAlternates.length > 0 || leadsNowhere
    if (unroutable) {
      const keys = unrouted.map((r) => JSON.stringify(r.key)).join(', ')
      findings.push(
        finding(graph, {
          kind: 'dlx-unroutable',
          severity: 'error',
          title: `DLX ${exchangeLabel(dlx)} of queue "${q.queue.name}" has no binding for ${keys || 'its dead letters'}`,
          why: 'A dead letter its dead-letter exchange cannot route is dropped silently: RabbitMQ publishes dead letters without the mandatory flag, so nothing returns them.',
          fix:
            dlx === ''
              ? `Set dead-letter-routing-key to the name of an existing queue, or use a named dead-letter exchange bound to the dead-letter queue.`
              : `Bind the dead-letter queue to ${exchangeLabel(dlx)} with ${keys ? `routing key ${keys}` : "the dead letters' keys"} (or "#" on a topic exchange), set an alternate-exchange on it that leads to the dead-letter queue, or set dead-letter-routing-key to a key it binds.${missingAlternates.length > 0 ? ` Declare the missing alternate exchange ${missingAlternates.map(exchangeLabel).join(', ')}.` : ''}`,
          evidence,
          objects: [...objects, ...missingAlternates.map(exchangeRef)],
        }),
      )
      continue
    }
    const keysUnknown = !q.deadLetterKeys.known && !anyKey && !graph.storedKeys.has(q.queue.name)
    if (indeterminate || keysUnknown || partly.length > 0) {
      findings.push(
        finding(graph, {
          kind: 'dlx-routing-unknown',
          severity: 'info',
          title: `Where the dead letters of queue "${q.queue.name}" go through DLX ${exchangeLabel(dlx)} depends on the messages`,
          why: indeterminate
            ? 'Some exchange on the way routes by message headers (or is a plugin type), so the doctor cannot tell whether every dead letter reaches a queue; any that does not is dropped.'
            : partly.length > 0
              ? `The dead letters keep the keys they were published with; some keys matching ${partly.map((r) => JSON.stringify(r.key)).join(', ')} have no binding on the DLX, and those dead letters are dropped.`
              : 'The dead letters keep the routing keys they were published with, which the broker does not record, and no stored letter shows them; any key the DLX does not bind is dropped.',
          fix: `Set dead-letter-routing-key on "${q.queue.name}" to a key ${exchangeLabel(dlx)} binds, or give ${exchangeLabel(dlx)} a catch-all: an alternate-exchange leading to the dead-letter queue, or a "#" binding.`,
          evidence,
          objects,
        }),
      )
    }
  }
  const description = `${withDlx.length} queues with a dead-letter exchange: the exchange exists, and their dead-letter keys route to a queue`
  return {
    findings,
    checks: [
      check('dlx-missing', withDlx.length, `${withDlx.length} queues with a dead-letter exchange: the exchange exists`, findings),
      check('dlx-unroutable', withDlx.length, description, findings),
      check('dlx-routing-unknown', withDlx.length, `${withDlx.length} queues with a dead-letter exchange: every dead-letter key is known (argument, bindings or stored letters)`, findings),
    ],
  }
}
