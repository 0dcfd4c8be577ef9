/**
 * The one place tests invoke App Router route handlers. Keep it that way: what a call needs besides the request (the
 * admin credential every route now checks) is added here and nowhere else.
 */
import { withAuth } from './auth'

export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const
export type HttpMethod = (typeof HTTP_METHODS)[number]

export type RouteParams = Record<string, string | string[]>
export type RouteHandler = (request: Request, context: { params: Promise<RouteParams> }) => Promise<Response>
/** What `import * as m from '@/app/api/…/route'` gives: the handlers plus Next's segment config (`dynamic`, …). */
export type RouteModule = { readonly [name: string]: unknown }

/** The HTTP methods a route module exports a handler for. */
export function methodsOf(module: RouteModule): HttpMethod[] {
  return HTTP_METHODS.filter((method) => typeof module[method] === 'function')
}

/**
 * Calls `module[method]` as Next does: the request, and the dynamic segments as a promise of params. A request without
 * credentials is sent as the provisioning admin (tests/helpers/auth.ts); pass `{ anonymous: true }` to send it as is.
 */
export async function callRoute(
  module: RouteModule,
  method: HttpMethod,
  request: Request,
  params: RouteParams = {},
  { anonymous = false }: { anonymous?: boolean } = {},
): Promise<Response> {
  const handler = module[method]
  if (typeof handler !== 'function') throw new Error(`the route module exports no ${method} handler`)
  return (handler as RouteHandler)(anonymous ? request : withAuth(request), { params: Promise.resolve(params) })
}

/** Calls a route as a signed-in caller (their Authorization header) with an optional JSON body: its status and text. */
export async function callAs(who: { authorization: string }, module: RouteModule, method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; text: string }> {
  const response = await callRoute(
    module,
    method,
    new Request(url, { method, headers: { authorization: who.authorization, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) }),
    {},
  )
  return { status: response.status, text: await response.text() }
}
