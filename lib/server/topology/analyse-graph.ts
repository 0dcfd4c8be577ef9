import 'server-only'
import type { EffectiveSettingDto, QueueRole, TopologyEdgeDto } from '@/lib/shared/schemas/topology'
import { topicMatches } from '@/lib/shared/topology/topic-match'
import type { BrokerSnapshot, SnapshotExchange, SnapshotQueue } from './broker-snapshot'
import { exchangeAlternate, majorVersion, queueEffectiveSettings, type QueueSettings } from './effective-settings'
import { buildRoutingTable, patternCanRoute, representativeKeys, routePublish, topicPatternsOverlap, type RouteResult, type RoutingTable } from './routing'

/*
 * The vhost's graph, analysed once for every rule (docs/topology.md#queue-roles): each queue's effective settings,
 * the routing keys its dead letters carry, where they go, and the role the doctor infers for it.
 */

export type DeadLetterKeys = {
  /** Keys the queue's dead letters carry: the dead-letter routing key, or the keys messages reach the queue with. */
  keys: string[]
  /** Topic patterns standing for keys: messages reached the queue through a wildcard binding. */
  patterns: string[]
  /** False when some messages may carry keys nobody can know statically (through fanout or headers exchanges). */
  known: boolean
}

export type AnalysedQueue = {
  id: string
  queue: SnapshotQueue
  settings: QueueSettings
  /** The effective dead-letter exchange ("" is the default exchange), or null without one. */
  dlx: string | null
  deadLetterKeys: DeadLetterKeys
  /**
   * Each dead-letter key routed through the DLX (empty without a DLX). A pattern is routed as its representative
   * keys and the DLX's literal binding keys it matches; `partial` when some of its keys may route nowhere, `none`
   * when none of them can route.
   */
  deadLetterRoutes: DeadLetterRoute[]
  /** Queues its dead letters reach; when the keys are unknown, every queue the DLX's bindings lead to. */
  deadLetterTargets: string[]
  /** Bound from an exchange that is no queue's DLX: an application publishes to it. */
  boundFromApp: boolean
  /** Some other queue's dead letters reach it. */
  reachedByDeadLetters: boolean
  role: QueueRole
  sourceId: string | null
}

export type DeadLetterRoute = { key: string; pattern: boolean; result: RouteResult; partial: boolean; none: boolean }

export type AnalysedExchange = { id: string; exchange: SnapshotExchange; alternate: EffectiveSettingDto | null; missing: boolean }

export type AnalysedGraph = {
  vhost: string
  brokerVersion: string
  majorVersion: number
  queues: Map<string, AnalysedQueue>
  exchanges: Map<string, AnalysedExchange>
  table: RoutingTable
  edges: TopologyEdgeDto[]
  /** Exchanges some queue dead-letters to. */
  dlxNames: Set<string>
  /** Routing keys of stored letters by the queue they died in, when the evidence has any. */
  storedKeys: Map<string, string[]>
}

export const queueId = (name: string) => `q:${name}`
export const exchangeId = (name: string) => `x:${name}`

const settingText = (settings: QueueSettings, key: string): string | null => {
  const value = settings.byKey.get(key)?.value
  return value === undefined || value === null ? null : String(value)
}

const hasWildcard = (key: string) => key.split('.').some((word) => word === '*' || word === '#')

/** Builds the analysed graph of a snapshot; `sources` are the Lazarus sources of this vhost (queue names drained). */
export function analyseGraph(options: { snapshot: BrokerSnapshot; sources: { id: string; queue: string }[]; storedKeys?: Map<string, string[]> }): AnalysedGraph {
  const { snapshot } = options
  const sourceOf = new Map(options.sources.map((s) => [s.queue, s.id]))
  const exchanges = new Map<string, AnalysedExchange>()
  for (const exchange of snapshot.exchanges) {
    exchanges.set(exchange.name, { id: exchangeId(exchange.name), exchange, alternate: exchangeAlternate({ exchange, policies: snapshot.policies }), missing: false })
  }
  const alternateOf = (x: AnalysedExchange) => (x.alternate?.value === null || x.alternate === null ? null : String(x.alternate.value))
  const table = buildRoutingTable({
    exchanges: [...exchanges.values()].map((x) => ({ name: x.exchange.name, type: x.exchange.type, alternateExchange: alternateOf(x) })),
    bindings: snapshot.bindings,
    queues: snapshot.queues.map((q) => q.name),
  })

  const settingsOf = new Map(snapshot.queues.map((q) => [q.name, queueEffectiveSettings({ queue: q, snapshot })]))
  const dlxOf = (name: string) => {
    const settings = settingsOf.get(name)
    return settings ? settingText(settings, 'dead-letter-exchange') : null
  }
  const dlxNames = new Set(snapshot.queues.map((q) => dlxOf(q.name)).filter((x): x is string => x !== null))
  // Exchanges only dead letters are sent to. A delay queue (a TTL, no consumer) dead-letters back into an
  // application's exchange, so its DLX does not count: applications publish there too, with keys only they know.
  const looksLikeDelay = (q: SnapshotQueue) => q.consumers === 0 && settingsOf.get(q.name)?.byKey.has('message-ttl') === true
  const pureDlx = new Set(snapshot.queues.filter((q) => !looksLikeDelay(q)).map((q) => dlxOf(q.name)).filter((x): x is string => x !== null))
  for (const q of snapshot.queues) if (looksLikeDelay(q)) pureDlx.delete(dlxOf(q.name) ?? '')
  const inbound = new Map<string, typeof snapshot.bindings>()
  for (const binding of snapshot.bindings) {
    const key = `${binding.destinationType}:${binding.destination}`
    const list = inbound.get(key) ?? []
    list.push(binding)
    inbound.set(key, list)
  }
  const deadLetterKeysOf = flowKeys({ snapshot, exchanges, dlxOf, pureDlx, settingsOf })

  const storedKeys = options.storedKeys ?? new Map<string, string[]>()
  const queues = new Map<string, AnalysedQueue>()
  for (const queue of snapshot.queues) {
    const settings = settingsOf.get(queue.name) as QueueSettings
    const dlx = dlxOf(queue.name)
    const deadLetterKeys = deadLetterKeysOf(queue.name)
    const routes: DeadLetterRoute[] = []
    const targets = new Set<string>()
    if (dlx !== null) {
      const keys = deadLetterKeys.known ? deadLetterKeys.keys : [...new Set([...deadLetterKeys.keys, ...(storedKeys.get(queue.name) ?? [])])]
      for (const key of keys) {
        const result = routePublish({ table, exchange: dlx, routingKey: key })
        routes.push({ key, pattern: false, result, partial: false, none: false })
      }
      for (const pattern of deadLetterKeys.patterns) routes.push(routePattern(table, dlx, pattern))
      routes.forEach((r) => r.result.queues.forEach((q) => targets.add(q)))
      if (!deadLetterKeys.known) bindingClosure(table, dlx).forEach((q) => targets.add(q))
    }
    const boundFromApp = (inbound.get(`queue:${queue.name}`) ?? []).some((b) => !pureDlx.has(b.source))
    queues.set(queue.name, {
      id: queueId(queue.name),
      queue,
      settings,
      dlx,
      deadLetterKeys,
      deadLetterRoutes: routes,
      deadLetterTargets: [...targets].sort(),
      boundFromApp,
      reachedByDeadLetters: false,
      role: 'other',
      sourceId: sourceOf.get(queue.name) ?? null,
    })
  }
  for (const q of queues.values()) for (const target of q.deadLetterTargets) if (target !== q.queue.name) (queues.get(target) as AnalysedQueue).reachedByDeadLetters = true
  for (const q of queues.values()) q.role = inferRole(q, queues)

  const edges: TopologyEdgeDto[] = []
  for (const b of snapshot.bindings) {
    const to = b.destinationType === 'queue' ? queueId(b.destination) : exchangeId(b.destination)
    edges.push({ id: `b:${exchangeId(b.source)}>${to}:${b.routingKey}`, from: exchangeId(b.source), to, kind: 'binding', routingKey: b.routingKey })
  }
  const ensureExchange = (name: string) => {
    if (exchanges.has(name)) return
    // A missing DLX or alternate exchange still gets a node, so the edge pointing at it shows the problem.
    exchanges.set(name, { id: exchangeId(name), exchange: { name, type: name === '' ? 'direct' : 'missing', durable: true, autoDelete: false, internal: false, arguments: {} }, alternate: null, missing: name !== '' })
  }
  for (const q of queues.values()) {
    if (q.dlx === null) continue
    ensureExchange(q.dlx)
    const routingKey = settingText(q.settings, 'dead-letter-routing-key')
    edges.push({ id: `d:${q.id}`, from: q.id, to: exchangeId(q.dlx), kind: 'dead-letter', routingKey })
  }
  for (const x of [...exchanges.values()]) {
    const alternate = alternateOf(x)
    if (alternate === null) continue
    ensureExchange(alternate)
    edges.push({ id: `a:${x.id}`, from: x.id, to: exchangeId(alternate), kind: 'alternate', routingKey: null })
  }
  return { vhost: snapshot.vhost, brokerVersion: snapshot.brokerVersion, majorVersion: majorVersion(snapshot.brokerVersion), queues, exchanges, table, edges, dlxNames, storedKeys }
}

type KeySet = { keys: Set<string>; patterns: Set<string>; known: boolean }

/*
 * The keys messages carry when they reach a queue or an exchange, to a fixed point over the graph (cycles included):
 * a direct binding (or a topic binding without wildcards) says the key exactly; a wildcard topic binding passes the
 * upstream keys and patterns it matches, or stands for them as a pattern when the upstream keys are not all known; a
 * fanout or headers exchange passes on whatever reached it. A queue nothing is bound to is reached through the
 * default exchange, by its name; an exchange that is not only a DLX takes what applications publish, with keys only
 * they know. Dead letters reaching a DLX carry their queue's dead-letter routing key, or its keys.
 */
function flowKeys(options: {
  snapshot: BrokerSnapshot
  exchanges: Map<string, AnalysedExchange>
  dlxOf: (queue: string) => string | null
  pureDlx: Set<string>
  settingsOf: Map<string, QueueSettings>
}): (queue: string) => DeadLetterKeys {
  const { snapshot, exchanges, dlxOf, pureDlx, settingsOf } = options
  const state = new Map<string, KeySet>()
  const stateOf = (id: string) => {
    let s = state.get(id)
    if (!s) {
      s = { keys: new Set(), patterns: new Set(), known: true }
      state.set(id, s)
    }
    return s
  }
  const bound = new Set(snapshot.bindings.map((b) => `${b.destinationType}:${b.destination}`))
  const fedByDeadLetters = new Set(snapshot.queues.map((q) => dlxOf(q.name)).filter((x): x is string => x !== null))
  for (const q of snapshot.queues) if (!bound.has(`queue:${q.name}`)) stateOf(`queue:${q.name}`).keys.add(q.name)
  for (const x of exchanges.values()) if (!(fedByDeadLetters.has(x.exchange.name) && pureDlx.has(x.exchange.name))) stateOf(`exchange:${x.exchange.name}`).known = false
  const routingKeyOf = (queue: string) => {
    const value = settingsOf.get(queue)?.byKey.get('dead-letter-routing-key')?.value
    return value === undefined || value === null ? null : String(value)
  }
  const deadLetterKeys = (queue: string): KeySet => {
    const routingKey = routingKeyOf(queue)
    return routingKey !== null ? { keys: new Set([routingKey]), patterns: new Set(), known: true } : stateOf(`queue:${queue}`)
  }
  let changed = true
  const add = (to: KeySet, key: string, into: 'keys' | 'patterns') => {
    if (to[into].has(key)) return
    to[into].add(key)
    changed = true
  }
  const pass = (to: KeySet, from: KeySet) => {
    from.keys.forEach((k) => add(to, k, 'keys'))
    from.patterns.forEach((p) => add(to, p, 'patterns'))
    if (!from.known && to.known) {
      to.known = false
      changed = true
    }
  }
  while (changed) {
    changed = false
    for (const binding of snapshot.bindings) {
      const to = stateOf(`${binding.destinationType}:${binding.destination}`)
      const from = stateOf(`exchange:${binding.source}`)
      const type = exchanges.get(binding.source)?.exchange.type
      if (type === 'direct' || (type === 'topic' && !hasWildcard(binding.routingKey))) add(to, binding.routingKey, 'keys')
      else if (type === 'topic') {
        if (!from.known) add(to, binding.routingKey, 'patterns')
        from.keys.forEach((k) => topicMatches(binding.routingKey, k) && add(to, k, 'keys'))
        // An upstream pattern it overlaps stays as it is: exact when the binding is "#", wider otherwise.
        from.patterns.forEach((p) => topicPatternsOverlap(binding.routingKey, p) && add(to, p, 'patterns'))
      } else pass(to, from)
    }
    for (const q of snapshot.queues) {
      const dlx = dlxOf(q.name)
      if (dlx !== null) pass(stateOf(`exchange:${dlx}`), deadLetterKeys(q.name))
    }
  }
  return (queue) => {
    const s = deadLetterKeys(queue)
    return { keys: [...s.keys].sort(), patterns: [...s.patterns].sort(), known: s.known }
  }
}

/** A topic pattern routed as its representative keys and the exchange's literal binding keys it matches. */
function routePattern(table: RoutingTable, exchange: string, pattern: string): DeadLetterRoute {
  const literal = (table.bindings.get(exchange) ?? []).map((b) => b.routingKey).filter((k) => !hasWildcard(k) && topicMatches(pattern, k))
  const representatives = representativeKeys(pattern).map((routingKey) => routePublish({ table, exchange, routingKey }))
  const all = [...representatives, ...literal.map((routingKey) => routePublish({ table, exchange, routingKey }))]
  const result: RouteResult = {
    queues: [...new Set(all.flatMap((r) => r.queues))].sort(),
    exchanges: [...new Set(all.flatMap((r) => r.exchanges))],
    indeterminate: all.some((r) => r.indeterminate),
    missingExchanges: [...new Set(all.flatMap((r) => r.missingExchanges))],
  }
  const can = patternCanRoute({ table, exchange, pattern })
  return { key: pattern, pattern: true, result, partial: representatives.some((r) => r.queues.length === 0), none: can === false && result.queues.length === 0 }
}

/** Every queue an exchange's bindings (and alternate exchanges) can lead to, whatever the key. */
export function bindingClosure(table: RoutingTable, exchange: string): Set<string> {
  const queues = new Set<string>()
  const seen = new Set<string>()
  const work = [exchange]
  while (work.length > 0) {
    const name = work.pop() as string
    if (seen.has(name) || name === '') continue
    seen.add(name)
    for (const binding of table.bindings.get(name) ?? []) {
      if (binding.destinationType === 'queue') queues.add(binding.destination)
      else work.push(binding.destination)
    }
    const alternate = table.exchanges.get(name)?.alternateExchange
    if (alternate) work.push(alternate)
  }
  return queues
}

/*
 * Queue roles (docs/topology.md#queue-roles), in this order:
 * - dlq: drained by a Lazarus source; or without a DLX of its own and either reached by other queues' dead letters or
 *   consumed by nobody (a parking queue an application publishes its given-up messages to);
 * - delay: has a DLX, a TTL or no consumer, is fed only by dead-letter exchanges, and dead-letters towards a work queue;
 * - work: has consumers, or is bound from an exchange no queue dead-letters to (an application's exchange);
 * - other: the rest.
 */
function inferRole(q: AnalysedQueue, queues: Map<string, AnalysedQueue>): QueueRole {
  if (q.sourceId !== null) return 'dlq'
  const consumers = q.queue.consumers
  const ttl = q.settings.byKey.has('message-ttl')
  const workish = (other: AnalysedQueue) => other.queue.consumers > 0 || (other.boundFromApp && other.dlx !== null)
  if (q.dlx !== null && (ttl || consumers === 0) && !q.boundFromApp) {
    const towardsWork = q.deadLetterTargets.some((name) => name !== q.queue.name && workish(queues.get(name) as AnalysedQueue))
    if (towardsWork) return 'delay'
  }
  if (q.dlx === null && (q.reachedByDeadLetters || (consumers === 0 && q.boundFromApp))) return 'dlq'
  if (consumers > 0 || q.boundFromApp) return 'work'
  return 'other'
}
