import 'server-only'
import { perProcess } from './per-process'

/**
 * What Lazarus' HTTP front (lib/server/platform/http/front.ts) recorded about a request before Next.js saw it. Next keeps
 * X-Forwarded-* headers a client sends and builds request.url from the bind address, so nothing security-relevant
 * may be read from those; the front strips forged headers, checks Host, and passes the TCP peer on in headers of
 * its own (which it removes from every incoming request first).
 */
export const FRONT_HEADERS = {
  peer: 'x-lazarus-peer',
  hostOk: 'x-lazarus-host-ok',
  trustedProxy: 'x-lazarus-trusted-proxy',
  https: 'x-lazarus-https',
  /** The request's path and query, for pages that send a signed-out visitor to sign in and back. */
  url: 'x-lazarus-url',
} as const

// One per process (per-process.ts): the front runs unbundled (lib/cli/serve.ts), the routes that read it in Next's bundles.
const front = perProcess('front', () => ({ active: false }))

/** Called once by the front of this process: from then on its headers are trusted. */
export function markFrontActive(): void {
  front.active = true
}

export function frontActive(): boolean {
  return front.active
}

export type RequestFacts = {
  /** Whether the front handled this request (false for handlers called directly, as the tests do). */
  viaFront: boolean
  /** The TCP peer's address. */
  peer: string | null
  /** The raw Host passed the front's check (DNS rebinding); only the health probe is served otherwise. */
  hostOk: boolean
  /** The peer is one of LAZARUS_TRUSTED_PROXIES, so its X-Forwarded-* and identity headers were kept. */
  trustedProxy: boolean
  /** The browser reached us over HTTPS (directly, or as a trusted proxy said). */
  https: boolean
  /** The raw Host header. */
  host: string | null
}

export function requestFacts(request: Request): RequestFacts {
  const host = request.headers.get('host')
  if (!frontActive()) return { viaFront: false, peer: null, hostOk: true, trustedProxy: false, https: false, host }
  const h = request.headers
  return {
    viaFront: true,
    peer: h.get(FRONT_HEADERS.peer),
    hostOk: h.get(FRONT_HEADERS.hostOk) === '1',
    trustedProxy: h.get(FRONT_HEADERS.trustedProxy) === '1',
    https: h.get(FRONT_HEADERS.https) === '1',
    host,
  }
}
