import 'server-only'
import ipaddr from 'ipaddr.js'

/** Why an address is no place for a webhook; null: a public unicast address. */
export type RefusedRange =
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link-local'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'not an address'

export type AddressClass = {
  /**
   * The address connected to, canonical; an IPv4 address reached through IPv6 (IPv4-mapped `::ffff:a.b.c.d`,
   * SIIT `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) is given as that IPv4 address, because that is where the
   * packets end up.
   */
  address: string
  kind: 'ipv4' | 'ipv6' | null
  refused: RefusedRange | null
  /**
   * Refused even when allow-listed: nothing listens for webhooks there, and each is a known way in (0.0.0.0 and ::
   * reach this machine on Linux; the metadata service hands out cloud credentials).
   */
  alwaysRefused: boolean
}

// Cloud metadata services: AWS, GCP, Azure, OpenStack on 169.254.169.254 (also link-local, but named for the message),
// AWS's IPv6 endpoint (inside fc00::/7).
const METADATA = new Set(['169.254.169.254', 'fd00:ec2::254'])
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96')
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3')
const ALWAYS_REFUSED = new Set<RefusedRange>(['unspecified', 'multicast', 'broadcast', 'metadata', 'not an address'])

const V4_RANGES: Partial<Record<string, RefusedRange>> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'shared',
  private: 'private',
  reserved: 'reserved',
  as112: 'reserved',
  amt: 'reserved',
}

const V6_RANGES: Partial<Record<string, RefusedRange>> = {
  unspecified: 'unspecified',
  linkLocal: 'link-local',
  multicast: 'multicast',
  loopback: 'loopback',
  uniqueLocal: 'private',
  deprecatedSiteLocal: 'private',
}

/**
 * Classifies an IP address in any form a resolver or URL parser accepts: dotted quad, the legacy numeric forms
 * (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`), IPv6 with or without brackets, IPv4-mapped and NAT64 IPv6.
 * Every range is ipaddr.js's; only 2000::/3 (the only IPv6 space handed out as public unicast) is added.
 */
export function classifyAddress(text: string): AddressClass {
  const raw = text.trim().replace(/^\[(.*)\]$/, '$1')
  if (!ipaddr.isValid(raw)) return { address: raw, kind: null, refused: 'not an address', alwaysRefused: true }
  const address = effectiveAddress(ipaddr.parse(raw))
  const canonical = address.toString()
  const refused = METADATA.has(canonical)
    ? 'metadata'
    : address.kind() === 'ipv4'
      ? (V4_RANGES[address.range()] ?? null)
      : ipv6Refusal(address as ipaddr.IPv6)
  return { address: canonical, kind: address.kind(), refused, alwaysRefused: refused !== null && ALWAYS_REFUSED.has(refused) }
}

function ipv6Refusal(address: ipaddr.IPv6): RefusedRange | null {
  const range = address.range()
  const named = V6_RANGES[range]
  if (named) return named
  // Anything else ipaddr.js names (6to4, Teredo, NAT64 local-use, documentation, ORCHID, discard…) either tunnels to
  // an address we cannot see or is not routed at all; 'unicast' outside 2000::/3 is IETF-reserved space.
  if (range !== 'unicast' || !address.match(GLOBAL_UNICAST_V6)) return 'reserved'
  return null
}

/** The IPv4 address behind an IPv6 one that embeds it at the end (mapped, SIIT, well-known NAT64), else the address. */
function effectiveAddress(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (address.kind() === 'ipv4') return address
  const v6 = address as ipaddr.IPv6
  const range = v6.range()
  if (range === 'ipv4Mapped' || range === 'rfc6145' || (range === 'rfc6052' && v6.match(NAT64_WELL_KNOWN))) {
    return new ipaddr.IPv4(v6.toByteArray().slice(-4))
  }
  return v6
}

const DESCRIPTIONS: Record<RefusedRange, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  shared: 'a shared (CGNAT) address',
  'link-local': 'a link-local address',
  metadata: 'a cloud metadata address',
  unspecified: 'the unspecified address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved address',
  'not an address': 'not an IP address',
}

export const describeRange = (range: RefusedRange) => DESCRIPTIONS[range]
