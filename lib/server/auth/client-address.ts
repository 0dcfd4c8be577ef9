import 'server-only'
import ipaddr from 'ipaddr.js'
import type { Config } from '@/lib/server/platform/config'
import type { RequestFacts } from '@/lib/server/platform/request-facts'
import { addressInRanges } from '@/lib/server/platform/addresses'

/**
 * The client's address for sign-in limits and the audit log. Behind a trusted proxy that is the right-most
 * X-Forwarded-For entry not itself a trusted proxy (entries further left are whatever the client wrote); otherwise
 * the TCP peer. Requests that bypassed the front (tests) count as `unknown`.
 */
export function clientAddress(request: Request, facts: RequestFacts, config: Pick<Config, 'LAZARUS_TRUSTED_PROXIES'>): string {
  const peer = facts.peer ? normalise(facts.peer) : 'unknown'
  if (!facts.trustedProxy) return peer
  const hops = (request.headers.get('x-forwarded-for') ?? '').split(',').map((h) => h.trim()).filter(Boolean)
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!ipaddr.isValid(hops[i])) return peer
    if (!addressInRanges(hops[i], config.LAZARUS_TRUSTED_PROXIES)) return normalise(hops[i])
  }
  return peer
}

const normalise = (address: string) => (ipaddr.isValid(address) ? ipaddr.process(address).toString() : 'unknown')
