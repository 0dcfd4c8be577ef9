import 'server-only'
import dns, { type LookupAddress } from 'node:dns'
import net from 'node:net'
import ipaddr from 'ipaddr.js'
import { classifyAddress, describeRange } from './webhook-address'

/** Resolves a host name to all its addresses, as getaddrinfo does for a connection. */
export type Resolve = (hostname: string, options: { family?: number; hints?: number }) => Promise<LookupAddress[]>

const systemResolve: Resolve = (hostname, options) => dns.promises.lookup(hostname, { family: options.family, hints: options.hints, all: true })

/** Refused by the webhook address policy; the message is stored as the delivery's error. */
export class WebhookRefusedError extends Error {
  override name = 'WebhookRefusedError'
}

export type WebhookPolicy = {
  /** Why sending to `hostname` at `address` is refused, starting with "refused:", or null when it is allowed. */
  refusal(hostname: string, address: string): string | null
  /**
   * A `lookup` for net/http/https that resolves the host and yields only addresses the policy allows, refusing the
   * connection when none is left. The check runs inside the connection's own resolution, so the address checked is
   * the address connected to: a name re-pointed at 127.0.0.1 after it was saved (DNS rebinding) is caught on every
   * connection, with no gap between check and use.
   */
  lookup: net.LookupFunction
  /** At save time: why the URL would be refused (resolving its host now), or null. */
  check(url: string): Promise<string | null>
}

/** A URL's host without IPv6 brackets, lower-case, without a trailing dot. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase()

/**
 * The rules for where webhooks may connect: public unicast addresses, plus what `allowedHosts` (canonical entries:
 * host names, addresses, CIDR ranges; see parseAllowedWebhookHost) lets through. A name entry allows whatever that
 * name resolves to, for that name only; an address or range allows those addresses under any name.
 */
export function createWebhookPolicy({ allowedHosts, resolve = systemResolve }: { allowedHosts: readonly string[]; resolve?: Resolve }): WebhookPolicy {
  const names = new Set<string>()
  const ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][] = []
  for (const entry of allowedHosts) {
    if (entry.includes('/')) ranges.push(ipaddr.parseCIDR(entry))
    else if (ipaddr.isValid(entry)) ranges.push(ipaddr.parseCIDR(`${entry}/${ipaddr.parse(entry).kind() === 'ipv4' ? 32 : 128}`))
    else names.add(entry)
  }

  const refusal = (hostname: string, address: string): string | null => {
    const c = classifyAddress(address)
    if (c.refused === null) return null
    const host = hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase()
    if (!c.alwaysRefused) {
      if (names.has(host)) return null
      const parsed = ipaddr.parse(c.address)
      if (ranges.some(([network, bits]) => network.kind() === parsed.kind() && parsed.match(network, bits))) return null
    }
    const what = !net.isIP(host) ? `${host} resolves to ${c.address},` : host === c.address ? `${host} is` : `${host} is ${c.address},`
    const hint = c.alwaysRefused ? '' : ' (an admin can allow it: /api/settings/webhooks)'
    return `refused: ${what} ${describeRange(c.refused)}${hint}`
  }

  /** The addresses of `hostname` the policy allows, or the reason none is. */
  const permitted = (hostname: string, addresses: LookupAddress[]): LookupAddress[] | string => {
    const allowed: LookupAddress[] = []
    let first: string | null = null
    for (const a of addresses) {
      const why = refusal(hostname, a.address)
      if (why === null) allowed.push(a)
      else first ??= why
    }
    return allowed.length > 0 ? allowed : (first ?? `refused: ${hostname} has no address`)
  }

  const lookup: net.LookupFunction = (hostname, options, callback) => {
    resolve(hostname, { family: typeof options.family === 'number' ? options.family : undefined, hints: options.hints }).then(
      (addresses) => {
        const result = permitted(hostname, addresses)
        if (typeof result === 'string') callback(new WebhookRefusedError(result), '', 0)
        else if (options.all) callback(null, result)
        else callback(null, result[0].address, result[0].family)
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    )
  }

  const check = async (url: string): Promise<string | null> => {
    let target: URL
    try {
      target = new URL(url)
    } catch {
      return 'not a valid URL'
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return 'must be an http(s) URL'
    // Credentials would go out as Basic auth to whoever the host turns out to be; receivers put secrets in the path.
    if (target.username || target.password) return 'must not contain a user name or password'
    const host = hostOf(target)
    // The WHATWG parser has already turned 0x7f000001, 2130706433, 0177.0.0.1 and 127.1 into 127.0.0.1.
    if (net.isIP(host)) return refusal(host, host)
    let addresses: LookupAddress[]
    try {
      addresses = await resolve(host, {})
    } catch (error) {
      return `${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`
    }
    const result = permitted(host, addresses)
    return typeof result === 'string' ? result : null
  }

  return { refusal, lookup, check }
}
