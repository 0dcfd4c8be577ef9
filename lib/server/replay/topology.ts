import 'server-only'
import { z } from 'zod'
import { getJson, isManagementNotFound as is404 } from '@/lib/server/platform/broker/management-api'
import type { ExchangeNode } from './route-match'

const exchangeSchema = z.object({
  name: z.string(),
  type: z.string(),
  arguments: z.record(z.string(), z.unknown()).optional(),
  policy: z.string().nullish(),
})
const bindingsSchema = z.array(
  z.object({ destination: z.string(), destination_type: z.enum(['queue', 'exchange']), routing_key: z.string() }),
)
const policySchema = z.object({ name: z.string(), definition: z.record(z.string(), z.unknown()) })

const vhostPath = (vhost: string) => encodeURIComponent(vhost)

/** The topology a replay plan checks, read through the management API (docs/rabbitmq.md#the-management-api). */
export type Topology = {
  /** Exchanges reachable from the targets (through exchange-to-exchange bindings and alternate exchanges); null: missing. */
  exchanges: Map<string, ExchangeNode | null>
  queues: Map<string, boolean>
}

/** One exchange with its type, effective alternate exchange (argument first, then policy) and outgoing bindings. */
export async function inspectExchange(vhost: string, name: string): Promise<ExchangeNode | null> {
  let info: z.infer<typeof exchangeSchema>
  try {
    info = exchangeSchema.parse(await getJson(`/api/exchanges/${vhostPath(vhost)}/${encodeURIComponent(name)}`))
  } catch (error) {
    if (is404(error)) return null
    throw error
  }
  const bindings = bindingsSchema.parse(await getJson(`/api/exchanges/${vhostPath(vhost)}/${encodeURIComponent(name)}/bindings/source`))
  let alternateExchange = typeof info.arguments?.['alternate-exchange'] === 'string' ? (info.arguments['alternate-exchange'] as string) : null
  if (alternateExchange === null && info.policy) {
    // The vhost's list, not /api/policies/{vhost}/{name}: reading one policy needs the policymaker tag, the list only
    // the management tag Lazarus' read-only management user has (docs/rabbitmq.md#broker-permissions).
    const policies = z.array(policySchema).parse(await getJson(`/api/policies/${vhostPath(vhost)}`))
    const ae = policies.find((p) => p.name === info.policy)?.definition['alternate-exchange']
    if (typeof ae === 'string') alternateExchange = ae
  }
  return {
    name: info.name,
    type: info.type,
    alternateExchange,
    bindings: bindings.map((b) => ({ destination: b.destination, destinationType: b.destination_type, routingKey: b.routing_key })),
  }
}

export async function queueExists(vhost: string, name: string): Promise<boolean> {
  // No queue has an empty name, and "/api/queues/{vhost}/" would answer the vhost's whole list (200).
  if (name === '') return false
  try {
    await getJson(`/api/queues/${vhostPath(vhost)}/${encodeURIComponent(name)}?columns=name`)
    return true
  } catch (error) {
    if (is404(error)) return false
    throw error
  }
}

const MAX_EXCHANGES = 50
const MAX_QUEUES = 100

/**
 * Reads every exchange reachable from `roots` (following exchange destinations and alternate exchanges) and the
 * existence of `queues`. Throws when the management API cannot be reached; the plan then reports "unknown".
 */
export async function loadTopology(vhost: string, roots: string[], queues: string[]): Promise<Topology> {
  const exchanges = new Map<string, ExchangeNode | null>()
  let frontier = [...new Set(roots.filter((r) => r !== ''))]
  while (frontier.length > 0 && exchanges.size < MAX_EXCHANGES) {
    const batch = frontier.slice(0, MAX_EXCHANGES - exchanges.size)
    const nodes = await Promise.all(batch.map((name) => inspectExchange(vhost, name)))
    const next = new Set<string>()
    batch.forEach((name, i) => {
      exchanges.set(name, nodes[i])
      const node = nodes[i]
      if (!node) return
      for (const b of node.bindings) if (b.destinationType === 'exchange') next.add(b.destination)
      if (node.alternateExchange !== null) next.add(node.alternateExchange)
    })
    frontier = [...next].filter((name) => name !== '' && !exchanges.has(name))
  }
  const wanted = [...new Set(queues)].slice(0, MAX_QUEUES)
  const found = await Promise.all(wanted.map((q) => queueExists(vhost, q)))
  return { exchanges, queues: new Map(wanted.map((q, i) => [q, found[i]])) }
}
