import 'server-only'
import { ZodError, type z } from 'zod'
import { authenticate } from '@/lib/server/auth/authenticate'
import { clientAddress } from '@/lib/server/auth/client-address'
import { hasPermission, isSignedIn, permittedPatterns, type Principal, type SignedIn } from '@/lib/server/auth/principal'
import { sourceIdsForPatterns } from '@/lib/server/auth/source-access'
import { getConfig, type Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { logger } from '@/lib/server/platform/log'
import { composition, type Composition } from '@/lib/server/platform/process/composition'
import { PERMISSIONS, type Permission } from '@/lib/shared/roles'
import { checkCrossSite, publicOrigin } from './csrf'
import { currentRequestId, requestIdFor, runInRequest } from '@/lib/server/platform/request-context'
import { requestFacts, type RequestFacts } from '@/lib/server/platform/request-facts'
import { beginRequest, callerKey, countMutation } from './request-limits'

const log = logger('api')

export type ErrorBody = { error: { code: string; message: string; details?: unknown } }

const NO_STORE = { 'cache-control': 'private, no-store' }

/** JSON request bodies larger than this are refused with 413 (the front refuses a larger Content-Length unread). */
export const MAX_JSON_BYTES = 1024 * 1024

export function json(data: unknown, init: ResponseInit = {}): Response {
  return Response.json(data, { ...init, headers: { ...NO_STORE, ...init.headers } })
}

function errorResponse(status: number, code: string, message: string, details?: unknown, headers: Record<string, string> = {}): Response {
  // A server-side failure names the request, so whoever reports it points at its log lines.
  const requestId = status >= 500 ? currentRequestId() : null
  if (requestId !== null && (details === undefined || isRecord(details))) details = { ...details, requestId }
  const body: ErrorBody = { error: { code, message, ...(details === undefined ? {} : { details }) } }
  return json(body, { status, headers })
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Maps any thrown value to the API's error envelope; unexpected errors are logged, never echoed (5xx: with `details.requestId`). */
export function toHttpError(error: unknown): Response {
  if (error instanceof AppError) {
    const headers: Record<string, string> = {}
    const retry = (error.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds
    if (error.code === 'rate_limited' && retry) headers['retry-after'] = String(retry)
    if (error.code === 'unauthenticated') headers['www-authenticate'] = 'Bearer'
    return errorResponse(error.status, error.code, error.message, error.details, headers)
  }
  if (error instanceof ZodError) {
    const message = error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')
    return errorResponse(400, 'invalid', message, error.issues.map((i) => ({ path: i.path, message: i.message })))
  }
  const code = (error as { code?: string } | null)?.code
  if (code === 'P2025') return errorResponse(404, 'not_found', 'Not found')
  if (code === 'P2002' || code === '23505') return errorResponse(409, 'conflict', 'Already exists')
  // 57014: a statement hit LAZARUS_STATEMENT_TIMEOUT_MS. The request asked for too much at once, not a server fault.
  if (code === '57014') return errorResponse(503, 'timeout', 'The query took too long; narrow the filters and try again')
  log.error('unexpected error', { error: error instanceof Error ? error.message : String(error), stack: error instanceof Error ? error.stack : undefined })
  return errorResponse(500, 'internal', 'Internal server error')
}

export type RouteOptions = {
  /** Who may call it (lib/shared/roles.ts). Every route declares one; a test calls every route as every role. */
  permission: Permission
  /**
   * Counts against the caller's per-minute limit of changes. Default: every method but GET and HEAD. Sign-in has
   * its own, stricter limits.
   */
  mutation?: boolean
  /**
   * What a caller without credentials is told (401). Default "Sign in first"; a route that machines call says what they
   * must send instead (GET /api/pauses: a guard token).
   */
  unauthenticated?: string
}

export type RouteContext<P> = {
  request: Request
  params: P
  /** The caller; anonymous only on routes whose permission is `public`. */
  principal: Principal
  /** The caller's name for the audit log and lineage headers. */
  actor: string
  /** Request-time database handle (its statements time out). Engines get their own pool. */
  db: Db
  /**
   * The process's composition root (lib/server/platform/process/composition.ts): what operations take besides `db`,
   * such as the publisher of pause events and the replay executor's nudge.
   */
  root: Composition
  config: Config
  facts: RequestFacts
  /** Where browsers reach this Lazarus (LAZARUS_PUBLIC_URL, else the checked Host), for links and redirects. */
  origin: string
  /** The client's address (behind a trusted proxy: from X-Forwarded-For), for sign-in limits and the audit log. */
  clientIp: string
  /** The query string as an object, for a zod schema. */
  query: Record<string, string>
  /**
   * The source ids the caller holds `permission` on (default: the route's): null when it holds it on every source.
   * Operations restrict what they read or change to these.
   */
  sourceIds(permission?: Permission): Promise<string[] | null>
  /** The caller, signed in; throws 401 if not (for `public` routes that act differently when signed in). */
  signedIn(): SignedIn
}

type Handler<P> = (context: RouteContext<P>) => Promise<Response>

export type RouteHandler = ((request: Request, context: { params: Promise<unknown> }) => Promise<Response>) & {
  readonly permission: Permission
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * Wraps a route handler: gives the request its id (lib/server/platform/request-context.ts: on every log line and audit
 * entry of the request, and in the `X-Request-Id` response header), authenticates the caller, checks the route's
 * declared permission, refuses cross-site requests and callers over their limits, awaits Next's params and funnels
 * every failure through `toHttpError`.
 */
export function route<P = Record<string, never>>(options: RouteOptions, handler: Handler<P>): RouteHandler {
  const serve = async (request: Request, context: { params: Promise<unknown> }, facts: RequestFacts): Promise<Response> => {
    let release: (() => void) | undefined
    try {
      const config = getConfig()
      if (!facts.viaFront && process.env.NODE_ENV === 'production') {
        throw new AppError('unavailable', 'Lazarus must be served through its front (npm start); this request bypassed it')
      }
      const root = composition()
      const db = await root.db()
      const principal = await authenticate(request, facts, { db, config })
      const unsafe = !SAFE_METHODS.has(request.method)
      if (unsafe && !(isSignedIn(principal) && principal.via === 'bearer')) checkCrossSite(request, facts, config)
      if (!hasPermission(principal, options.permission)) {
        if (!isSignedIn(principal)) throw new AppError('unauthenticated', options.unauthenticated ?? 'Sign in first')
        throw new AppError('forbidden', `This needs the ${describe(options.permission)} permission`)
      }
      if (isSignedIn(principal)) {
        release = beginRequest(config, callerKey(principal))
        if (options.mutation ?? unsafe) await countMutation(config, callerKey(principal))
      }
      const patterns = new Map<Permission, Promise<string[] | null>>()
      const params = ((await context?.params) ?? {}) as P
      return await handler({
        request,
        params,
        principal,
        actor: isSignedIn(principal) ? principal.actor : 'anonymous',
        db,
        root,
        config,
        facts,
        origin: publicOrigin(request, facts, config),
        clientIp: clientAddress(request, facts, config),
        query: Object.fromEntries(new URL(request.url).searchParams),
        sourceIds(permission = options.permission) {
          if (!patterns.has(permission)) patterns.set(permission, sourceIdsForPatterns({ sql: db.sql, patterns: permittedPatterns(principal, permission) }))
          return patterns.get(permission)!
        },
        signedIn() {
          if (!isSignedIn(principal)) throw new AppError('unauthenticated', 'Sign in first')
          return principal
        },
      })
    } catch (error) {
      return toHttpError(error)
    } finally {
      release?.()
    }
  }
  const wrapped = (request: Request, context: { params: Promise<unknown> }): Promise<Response> => {
    const facts = requestFacts(request)
    const requestId = requestIdFor(request, facts.trustedProxy)
    return runInRequest({ requestId }, async () => {
      const started = performance.now()
      const response = await serve(request, context, facts)
      log.debug('request', { method: request.method, path: new URL(request.url).pathname, status: response.status, ms: Math.round(performance.now() - started) })
      return withHeader(response, 'x-request-id', requestId)
    })
  }
  return Object.assign(wrapped, { permission: options.permission })
}

function withHeader(response: Response, name: string, value: string): Response {
  try {
    response.headers.set(name, value)
    return response
  } catch {
    // A response with immutable headers (Response.redirect, a fetched one passed on): the same response, copied.
    const copy = new Response(response.body, response)
    copy.headers.set(name, value)
    return copy
  }
}

function describe(permission: Permission): string {
  const role = PERMISSIONS[permission]
  return role ? `${permission} (${role})` : permission
}

/** Reads a JSON body of at most `maxBytes` (see readBody) and parses it with `schema`. */
export async function readJson<S extends z.ZodType>(request: Request, schema: S, { maxBytes = MAX_JSON_BYTES } = {}): Promise<z.infer<S>> {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(await readBody(request, maxBytes))
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new AppError('invalid', 'Request body must be valid JSON')
  }
  return schema.parse(body)
}

/**
 * Reads a request body of at most `maxBytes`. A declared Content-Length over the limit is refused before reading; a
 * chunked body is read only up to the limit.
 */
export async function readBody(request: Request, maxBytes: number): Promise<Buffer<ArrayBuffer>> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (declared > maxBytes) throw tooLarge(maxBytes)
  if (!request.body) return Buffer.alloc(0)
  const chunks: Uint8Array[] = []
  const reader = request.body.getReader()
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      // The body is refused either way; a stream that errored cannot be cancelled and needs nothing more.
      await reader.cancel().catch(() => {})
      throw tooLarge(maxBytes)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

const tooLarge = (maxBytes: number) => new AppError('too_large', `Request body is larger than ${maxBytes} bytes`, { maxBytes })
