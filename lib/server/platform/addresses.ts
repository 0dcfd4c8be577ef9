import 'server-only'
import ipaddr from 'ipaddr.js'

/** A single address or a CIDR range, IPv4 or IPv6. */
export function isCidrOrIp(value: string): boolean {
  if (value.includes('/')) {
    try {
      ipaddr.parseCIDR(value)
      return true
    } catch {
      return false
    }
  }
  return ipaddr.isValid(value)
}

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number]

function toRange(value: string): Range {
  if (value.includes('/')) return ipaddr.parseCIDR(value)
  const address = ipaddr.process(value)
  return [address, address.kind() === 'ipv4' ? 32 : 128]
}

/**
 * Whether `peer` (a socket's remote address, possibly an IPv4-mapped IPv6 address such as ::ffff:10.0.0.5) lies
 * in one of `ranges`. Mapped addresses are compared as the IPv4 address they carry.
 */
export function addressInRanges(peer: string | null | undefined, ranges: readonly string[]): boolean {
  if (!peer || ranges.length === 0 || !ipaddr.isValid(peer)) return false
  const address = ipaddr.process(peer)
  for (const entry of ranges) {
    const [base, bits] = toRange(entry)
    if (base.kind() !== address.kind()) continue
    if (address.match([base, bits] as never)) return true
  }
  return false
}

/** `localhost`, 127.0.0.0/8 and ::1: names a DNS-rebinding page can never make a browser send as its Host. */
export function isLoopbackHostname(hostname: string): boolean {
  const bare = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true
  if (!ipaddr.isValid(bare)) return false
  return ipaddr.process(bare).range() === 'loopback'
}
