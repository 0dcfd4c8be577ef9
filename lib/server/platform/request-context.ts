import 'server-only'
import { AsyncLocalStorage } from 'node:async_hooks'
import { randomUUID } from 'node:crypto'
import { perProcess } from './per-process'

/** What every log line and audit entry written while serving one request learns about it, without being passed it. */
export type RequestContext = { requestId: string }

// One per process (per-process.ts): Next bundles this module more than once, and a line logged by one copy must see
// the request another copy entered.
const storage = perProcess('request-context', () => new AsyncLocalStorage<RequestContext>())

/** Runs `fn` as part of the request `context`: everything it starts, awaited or not, sees the context. */
export function runInRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn)
}

/**
 * Runs `fn` outside any request: for work a request sets off but does not own (an engine woken by it, a connection
 * it happens to open first), whose log lines and audit entries must not carry that request's id.
 */
export function outsideRequest<T>(fn: () => T): T {
  return storage.exit(fn)
}

/**
 * `fn`, called later from anywhere, runs in the request being served now: for callbacks a request hands to code that
 * calls them from its own context (a response body's pull, which the HTTP layer calls after the handler returned).
 */
export function bindToRequest<F extends (...args: never[]) => unknown>(fn: F): F {
  return AsyncLocalStorage.bind(fn)
}

/** The id of the request being served, or null outside one (engines, start-up). */
export function currentRequestId(): string | null {
  return storage.getStore()?.requestId ?? null
}

// What load balancers and proxies send (UUIDs, hex, base64, Envoy and Heroku ids): no spaces, quotes or controls, so
// it goes into a header, a log line and the audit log as it came.
const ACCEPTED_ID = /^[A-Za-z0-9._:+=/@-]{1,128}$/

/**
 * The request's id: the `X-Request-Id` a trusted proxy sent (docs/security.md: only LAZARUS_TRUSTED_PROXIES may set
 * proxy headers), so one id follows the request through both; otherwise a fresh UUID.
 */
export function requestIdFor(request: Request, fromTrustedProxy: boolean): string {
  const given = fromTrustedProxy ? request.headers.get('x-request-id') : null
  return given !== null && ACCEPTED_ID.test(given) ? given : randomUUID()
}
