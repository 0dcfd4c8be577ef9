import 'server-only'
import { topicMatches } from '@/lib/shared/topology/topic-match'
import type { SnapshotBinding } from './broker-snapshot'

/*
 * Where a message published to an exchange with a routing key goes, as the broker routes it
 * (docs/topology.md#findings, "dead letters the broker cannot route"): direct exchanges compare keys, topic exchanges
 * match `*` (one word) and `#` (any number of words), fanout exchanges take every binding, headers exchanges (and
 * types Lazarus does not know, from plugins) depend on the message, so the answer is indeterminate. Exchange-to-
 * exchange bindings are followed; an exchange whose own bindings match nothing hands the message to its alternate
 * exchange; the default exchange "" delivers to the queue named by the key. Dead-lettering routes the same way,
 * alternate exchanges included (docs/rabbitmq.md#dead-lettering).
 */

export type RoutingTable = {
  exchanges: Map<string, { type: string; alternateExchange: string | null }>
  /** Bindings by source exchange. */
  bindings: Map<string, SnapshotBinding[]>
  queues: Set<string>
}

export type RouteResult = {
  /** Queues the message reaches (for sure, unless `indeterminate`). */
  queues: string[]
  /** Exchanges it passed through, the first included. */
  exchanges: string[]
  /** Some exchange on the way routes by what only the message knows (headers, plugin types). */
  indeterminate: boolean
  /** Exchanges on the way that do not exist (a missing alternate exchange, or the first one). */
  missingExchanges: string[]
}

export function buildRoutingTable(options: {
  exchanges: { name: string; type: string; alternateExchange: string | null }[]
  bindings: SnapshotBinding[]
  queues: string[]
}): RoutingTable {
  const bindings = new Map<string, SnapshotBinding[]>()
  for (const binding of options.bindings) {
    const list = bindings.get(binding.source) ?? []
    list.push(binding)
    bindings.set(binding.source, list)
  }
  return {
    exchanges: new Map(options.exchanges.map((x) => [x.name, { type: x.type, alternateExchange: x.alternateExchange }])),
    bindings,
    queues: new Set(options.queues),
  }
}

const words = (key: string) => (key === '' ? [] : key.split('.'))

/** Routes a publish to `exchange` with `routingKey` through the table. */
export function routePublish(options: { table: RoutingTable; exchange: string; routingKey: string }): RouteResult {
  const { table, routingKey } = options
  const queues = new Set<string>()
  const seen = new Set<string>()
  const missing = new Set<string>()
  let indeterminate = false
  const work = [options.exchange]
  while (work.length > 0) {
    const name = work.shift() as string
    if (seen.has(name)) continue
    seen.add(name)
    if (name === '') {
      if (table.queues.has(routingKey)) queues.add(routingKey)
      continue
    }
    const exchange = table.exchanges.get(name)
    if (!exchange) {
      missing.add(name)
      continue
    }
    const bindings = table.bindings.get(name) ?? []
    let matched: SnapshotBinding[]
    if (exchange.type === 'fanout') matched = bindings
    else if (exchange.type === 'direct') matched = bindings.filter((b) => b.routingKey === routingKey)
    else if (exchange.type === 'topic') matched = bindings.filter((b) => topicMatches(b.routingKey, routingKey))
    else {
      // headers, x-consistent-hash, x-delayed-message, …: what matches depends on the message.
      indeterminate = true
      continue
    }
    for (const binding of matched) {
      if (binding.destinationType === 'queue') queues.add(binding.destination)
      else work.push(binding.destination)
    }
    if (matched.length === 0 && exchange.alternateExchange !== null) work.push(exchange.alternateExchange)
  }
  return { queues: [...queues].filter((q) => table.queues.has(q)).sort(), exchanges: [...seen], indeterminate, missingExchanges: [...missing] }
}

/** Routing keys no binding is likely to name: when both route somewhere, the exchange takes any key (fanout, `#`, an alternate exchange). */
const PROBE_KEYS = ['\u0000lazarus-probe', '\u0000lazarus.probe.of.many.words']

/** Whether a message with any routing key published to `exchange` reaches some queue. */
export function routesAnyKey(options: { table: RoutingTable; exchange: string }): boolean {
  return PROBE_KEYS.every((routingKey) => routePublish({ ...options, routingKey }).queues.length > 0)
}

/** Whether some routing key matches both topic patterns (a pattern without wildcards is a key). */
export function topicPatternsOverlap(a: string, b: string): boolean {
  const p = words(a)
  const q = words(b)
  const memo = new Map<number, boolean>()
  const overlap = (i: number, j: number): boolean => {
    const id = i * (q.length + 1) + j
    const known = memo.get(id)
    if (known !== undefined) return known
    let result: boolean
    if (i === p.length && j === q.length) result = true
    else if (i < p.length && p[i] === '#') result = overlap(i + 1, j) || (j < q.length && overlap(i, j + 1))
    else if (j < q.length && q[j] === '#') result = overlap(i, j + 1) || (i < p.length && overlap(i + 1, j))
    else result = i < p.length && j < q.length && (p[i] === '*' || q[j] === '*' || p[i] === q[j]) && overlap(i + 1, j + 1)
    memo.set(id, result)
    return result
  }
  return overlap(0, 0)
}

/**
 * Keys standing for every key of a topic pattern, made of words no binding names: when all of them route, every key
 * of the pattern routes through wildcard bindings (`#` stands for no word and for two).
 */
export function representativeKeys(pattern: string): string[] {
  const make = (hash: string[]) => words(pattern).flatMap((w) => (w === '*' ? ['\u0000w'] : w === '#' ? hash : [w])).join('.')
  return [...new Set([make([]), make(['\u0000h1', '\u0000h2'])])]
}

/**
 * Whether some key of a topic pattern can leave `exchange` through one of its own bindings or its alternate exchange;
 * null when the exchange routes by what only the message knows.
 */
export function patternCanRoute(options: { table: RoutingTable; exchange: string; pattern: string }): boolean | null {
  const { table, exchange, pattern } = options
  if (exchange === '') return [...table.queues].some((q) => topicMatches(pattern, q))
  const x = table.exchanges.get(exchange)
  if (!x) return false
  if (x.alternateExchange !== null) return true
  const bindings = table.bindings.get(exchange) ?? []
  if (x.type === 'fanout') return bindings.length > 0
  if (x.type === 'direct') return bindings.some((b) => topicMatches(pattern, b.routingKey))
  if (x.type === 'topic') return bindings.some((b) => topicPatternsOverlap(pattern, b.routingKey))
  return null
}
