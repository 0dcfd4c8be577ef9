import 'server-only'
import { topicMatches } from '@/lib/shared/topology/topic-match'

/** An exchange as the plan needs it (management API), with the bindings going out of it. */
export type ExchangeNode = {
  name: string
  type: string
  alternateExchange: string | null
  bindings: { destination: string; destinationType: 'queue' | 'exchange'; routingKey: string }[]
}

/** Queues a message with this routing key reaches; null when it cannot be known statically (headers exchanges, plugins). */
export type RouteResult = { queues: string[] | null; viaAlternate: boolean }

function bindingMatches(type: string, bindingKey: string, routingKey: string): boolean | null {
  if (type === 'fanout') return true
  if (type === 'direct') return bindingKey === routingKey
  if (type === 'topic') return topicMatches(bindingKey, routingKey)
  return null
}

/**
 * Routes a key through exchanges the way RabbitMQ does for the built-in types: bindings to queues, exchange-to-exchange
 * bindings (followed, cycles cut), and the alternate exchange when nothing matched. The default exchange ('') routes
 * to the queue named by the key, when `queueExists` says it exists.
 */
export function routeKey(
  exchanges: ReadonlyMap<string, ExchangeNode>,
  exchange: string,
  routingKey: string,
  queueExists: (queue: string) => boolean | null,
): RouteResult {
  const queues = new Set<string>()
  let unknown = false
  let viaAlternate = false
  const visit = (name: string, depth: number, seen: Set<string>): boolean => {
    if (seen.has(name) || depth > 8) return false
    seen.add(name)
    if (name === '') {
      const exists = queueExists(routingKey)
      if (exists === null) unknown = true
      if (exists) queues.add(routingKey)
      return exists === true
    }
    const node = exchanges.get(name)
    if (!node) {
      unknown = true
      return false
    }
    let routed = false
    for (const binding of node.bindings) {
      const matches = bindingMatches(node.type, binding.routingKey, routingKey)
      if (matches === null) {
        unknown = true
        continue
      }
      if (!matches) continue
      if (binding.destinationType === 'queue') {
        queues.add(binding.destination)
        routed = true
      } else if (visit(binding.destination, depth + 1, seen)) {
        routed = true
      }
    }
    if (!routed && node.alternateExchange !== null && !unknown) {
      viaAlternate = true
      routed = visit(node.alternateExchange, depth + 1, seen)
    }
    return routed
  }
  visit(exchange, 0, new Set())
  return { queues: unknown ? null : [...queues].sort(), viaAlternate }
}
