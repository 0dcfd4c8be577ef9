import ipaddr from 'ipaddr.js'
import { z } from 'zod'

/** Alert webhooks one Lazarus keeps: each alert is one POST per webhook, retried for an hour, so this bounds the fan-out. */
export const MAX_WEBHOOKS = 20
export const MAX_ALLOWED_WEBHOOK_HOSTS = 100

// RFC 1123 labels; `_` too, because internal DNS names carry it (e.g. _mattermost.corp) and resolvers accept it.
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/

/**
 * An allow-list entry in its canonical form, or why it is not one. Entries are a host name (its addresses are allowed
 * for that name only), an IP address or a CIDR range. IPv4 must be four decimal numbers: `0177.0.0.1` means
 * 127.0.0.1 to some parsers and 177.0.0.1 to people, and an allow-list must not be read two ways.
 */
export function parseAllowedWebhookHost(raw: string): { entry: string } | { problem: string } {
  const value = raw.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1')
  if (value.includes('/')) {
    if (!ipaddr.isValidCIDR(value)) return { problem: ipaddr.isValid(value.split('/')[0]) ? 'not a valid CIDR range' : 'not a host name, IP address or CIDR range' }
    const [address, bits] = ipaddr.parseCIDR(value)
    if (address.kind() === 'ipv4' && !ipaddr.IPv4.isValidCIDRFourPartDecimal(value)) return { problem: 'write IPv4 ranges as four decimal numbers and a prefix (10.1.0.0/16)' }
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) return { problem: 'write IPv4-mapped ranges as IPv4 (10.1.0.0/16)' }
    const network = address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(value) : ipaddr.IPv6.networkAddressFromCIDR(value)
    return { entry: `${network.toString()}/${bits}` }
  }
  if (ipaddr.isValid(value)) {
    const address = ipaddr.parse(value)
    if (address.kind() === 'ipv4' && !ipaddr.IPv4.isValidFourPartDecimal(value)) return { problem: 'write IPv4 addresses as four decimal numbers (10.1.2.3)' }
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).zoneId) return { problem: 'an IPv6 zone (%…) cannot be allow-listed' }
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) return { entry: (address as ipaddr.IPv6).toIPv4Address().toString() }
    return { entry: address.toString() }
  }
  const name = value.replace(/\.$/, '')
  const labels = name.split('.')
  if (name.length === 0 || name.length > 253 || !labels.every((l) => LABEL.test(l)) || /^[0-9]+$/.test(labels[labels.length - 1])) {
    return { problem: 'not a host name, IP address or CIDR range' }
  }
  return { entry: name }
}

/** One allow-list entry, canonicalised (see parseAllowedWebhookHost). */
export const allowedWebhookHostSchema = z
  .string()
  .max(300)
  .transform((raw, ctx) => {
    const parsed = parseAllowedWebhookHost(raw)
    if ('problem' in parsed) {
      ctx.addIssue({ code: 'custom', message: parsed.problem })
      return z.NEVER
    }
    return parsed.entry
  })

// PUT /api/settings/webhooks: the whole list, replacing the stored one.
export const updateWebhookSettingsSchema = z
  .object({ allowedHosts: z.array(allowedWebhookHostSchema).max(MAX_ALLOWED_WEBHOOK_HOSTS) })
  .strict()
  .transform((input) => ({ allowedHosts: [...new Set(input.allowedHosts)] }))
export type UpdateWebhookSettingsInput = z.infer<typeof updateWebhookSettingsSchema>

/** GET /api/settings/webhooks (and the answer to PUT). */
export type WebhookSettingsDto = {
  /** Hosts, addresses and CIDR ranges webhooks may reach although they are not public (stored, editable). */
  allowedHosts: string[]
  /** Further entries from LAZARUS_WEBHOOK_ALLOWED_HOSTS (read-only here). */
  environmentAllowedHosts: string[]
  maxWebhooks: number
  updatedAt: string | null
  updatedBy: string | null
}
