import 'server-only'
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { addressInRanges, isLoopbackHostname } from '@/lib/server/platform/addresses'
import { FRONT_HEADERS, markFrontActive } from '@/lib/server/platform/request-facts'
import { logger } from '@/lib/server/platform/log'

const log = logger('front')

export type FrontOptions = {
  /** LAZARUS_PUBLIC_URL: its host is the one Host besides loopback names this Lazarus answers to. */
  publicUrl: string | undefined
  trustedProxies: readonly string[]
  /** Identity headers only a trusted proxy may send (the user and groups headers of proxy sign-in). */
  identityHeaders: readonly string[]
  /** Request bodies with a larger Content-Length are refused unread (413). */
  maxBodyBytes: number
  /** Routes that take larger bodies (a message body's replacement upload), by path; the route reads at most as much. */
  largeBodyRoutes?: readonly { path: RegExp; maxBytes: number }[]
  /** `next dev` needs eval and a websocket for hot reloading. */
  dev: boolean
}

type NextHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void

/** Headers only a trusted proxy may set: they claim a path through a proxy, an identity, or the proxy's request id. */
function isForgeable(name: string, identityHeaders: readonly string[]): boolean {
  return name.startsWith('x-forwarded-') || name === 'forwarded' || name === 'x-real-ip' || name === 'x-request-id' || identityHeaders.includes(name)
}

function hostnameOf(host: string): string | null {
  try {
    return new URL(`http://${host}`).hostname
  } catch {
    return null
  }
}

/** Whether the raw Host names this Lazarus: LAZARUS_PUBLIC_URL's host (with its port), or a loopback name. */
export function hostAllowed(host: string | undefined, publicUrl: string | undefined): boolean {
  if (!host || host.length > 300) return false
  const hostname = hostnameOf(host)
  if (!hostname) return false
  if (isLoopbackHostname(hostname)) return true
  if (!publicUrl) return false
  return host.toLowerCase() === new URL(publicUrl).host.toLowerCase()
}

/**
 * Content-Security-Policy with a fresh nonce per response. Next.js reads the nonce from the request's CSP header
 * and puts it on every script it renders; nothing else may run (no inline scripts, no eval outside `next dev`).
 * Inline styles stay allowed: React's style attributes need them and they cannot run code.
 * Workers come from our own origin only (the topology page lays its graph out in a module worker, bundled as a file
 * under /_next/static): `worker-src` would otherwise fall back to `script-src`, whose 'strict-dynamic' ignores 'self'.
 */
export function contentSecurityPolicy(nonce: string, dev: boolean): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ''}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "worker-src 'self'",
    "font-src 'self' data:",
    `connect-src 'self'${dev ? ' ws: wss:' : ''}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/**
 * Lazarus' HTTP front (docs/security.md, "The HTTP surface"): the server's own request listener, in front of
 * Next.js. It records the TCP peer, drops X-Forwarded-* and identity headers unless the peer is a trusted proxy,
 * refuses Hosts that are not ours (DNS rebinding; the health probe still gets its status), refuses bodies declared
 * too large before reading them, and sets the security headers of every response.
 */
export function createFront(next: NextHandler, options: FrontOptions): (req: IncomingMessage, res: ServerResponse) => void {
  markFrontActive()
  const https = options.publicUrl?.startsWith('https:') ?? false
  return (req, res) => {
    const peer = req.socket.remoteAddress ?? null
    const trusted = addressInRanges(peer, options.trustedProxies)
    const path = (req.url ?? '/').split('?')[0]

    // Rebuild the header list: what a client may not forge goes, and our own markers are set afresh.
    const kept: string[] = []
    const raw = req.rawHeaders
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i].toLowerCase()
      if (name.startsWith('x-lazarus-')) continue
      if (name === 'content-security-policy' || name === 'content-security-policy-report-only') continue
      if (!trusted && isForgeable(name, options.identityHeaders)) continue
      kept.push(raw[i], raw[i + 1])
    }
    const hostOk = hostAllowed(req.headers.host, options.publicUrl)
    const forwardedHttps = trusted && (req.headers['x-forwarded-proto'] ?? '').toString().split(',')[0].trim() === 'https'
    const nonce = randomBytes(16).toString('base64')
    const csp = contentSecurityPolicy(nonce, options.dev)
    kept.push(
      FRONT_HEADERS.peer, peer ?? '',
      FRONT_HEADERS.hostOk, hostOk ? '1' : '0',
      FRONT_HEADERS.trustedProxy, trusted ? '1' : '0',
      FRONT_HEADERS.https, https || forwardedHttps ? '1' : '0',
      FRONT_HEADERS.url, (req.url ?? '/').slice(0, 2000),
      'content-security-policy', csp,
    )
    req.rawHeaders.length = 0
    req.rawHeaders.push(...kept)
    const headers: Record<string, string | string[]> = {}
    for (let i = 0; i < kept.length; i += 2) {
      const name = kept[i].toLowerCase()
      const value = kept[i + 1]
      if (name === 'set-cookie') headers[name] = [...((headers[name] as string[]) ?? []), value]
      else headers[name] = name in headers ? `${headers[name]}, ${value}` : value
    }
    // IncomingMessage.headers is a lazily built getter on recent Node versions; replace it with the cleaned list.
    Object.defineProperty(req, 'headers', { value: headers, writable: true, configurable: true, enumerable: true })

    setDefaultHeaders(res, [
      ['Content-Security-Policy', csp],
      ['X-Frame-Options', 'DENY'],
      ['X-Content-Type-Options', 'nosniff'],
      ['Referrer-Policy', 'same-origin'],
      ['Cross-Origin-Opener-Policy', 'same-origin'],
      ['Permissions-Policy', 'camera=(), microphone=(), geolocation=()'],
      ...(https ? [['Strict-Transport-Security', 'max-age=31536000'] as [string, string]] : []),
    ])

    if (!hostOk && path !== '/api/health') {
      log.warn('refused a request for another host', { host: String(req.headers.host ?? ''), peer })
      return refuse(res, 421, 'misdirected', 'This Lazarus does not answer to that Host; use its address (LAZARUS_PUBLIC_URL)')
    }
    const declared = Number(req.headers['content-length'] ?? 0)
    const maxBodyBytes = options.largeBodyRoutes?.find((r) => r.path.test(path))?.maxBytes ?? options.maxBodyBytes
    if (declared > maxBodyBytes) {
      res.setHeader('Connection', 'close')
      return refuse(res, 413, 'too_large', `Request body is larger than ${maxBodyBytes} bytes`)
    }
    Promise.resolve(next(req, res)).catch((error: unknown) => {
      log.error('request failed', { path, error: (error as Error)?.message })
      if (!res.headersSent) refuse(res, 500, 'internal', 'Internal server error')
      else res.destroy()
    })
  }
}

/**
 * Headers every response gets unless the application set its own (the raw body download sets a stricter, sandboxing
 * CSP): added when the head is written, whichever way it is (writeHead, or implicitly by write/end).
 */
function setDefaultHeaders(res: ServerResponse, defaults: [string, string][]): void {
  const writeHead = res.writeHead
  res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse['writeHead']>) {
    const given = (args as unknown[]).find((a) => typeof a === 'object' && a !== null && !Array.isArray(a)) as Record<string, unknown> | undefined
    const givenNames = new Set(Object.keys(given ?? {}).map((k) => k.toLowerCase()))
    for (const [name, value] of defaults) if (!this.hasHeader(name) && !givenNames.has(name.toLowerCase())) this.setHeader(name, value)
    return writeHead.apply(this, args)
  } as ServerResponse['writeHead']
}

function refuse(res: ServerResponse, status: number, code: string, message: string): void {
  res.statusCode = status
  res.setHeader('Content-Type', 'application/json')
  res.setHeader('Cache-Control', 'no-store')
  res.end(JSON.stringify({ error: { code, message } }))
}
