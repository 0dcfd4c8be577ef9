import 'server-only'
import { ZodError, type z } from 'zod'
import { AppError } from '@/lib/server/errors/app-error'

export type ErrorBody = { error: { code: string; message: string; details?: unknown } }

const NO_STORE = { 'cache-control': 'private, no-store' }

export function json(data: unknown, init: ResponseInit = {}): Response {
  return Response.json(data, { ...init, headers: { ...NO_STORE, ...init.headers } })
}

function errorResponse(status: number, code: string, message: string, details?: unknown): Response {
  const body: ErrorBody = { error: { code, message, ...(details === undefined ? {} : { details }) } }
  return json(body, { status })
}

/** Maps any thrown value to the API's error envelope; unexpected errors are logged, never echoed. */
export function toHttpError(error: unknown): Response {
  if (error instanceof AppError) return errorResponse(error.status, error.code, error.message, error.details)
  if (error instanceof ZodError) {
    const message = error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')
    return errorResponse(400, 'invalid', message, error.issues.map((i) => ({ path: i.path, message: i.message })))
  }
  const code = (error as { code?: string } | null)?.code
  if (code === 'P2025') return errorResponse(404, 'not_found', 'Not found')
  if (code === 'P2002' || code === '23505') return errorResponse(409, 'conflict', 'Already exists')
  console.error('[api] unexpected error', error)
  return errorResponse(500, 'internal', 'Internal server error')
}

type Handler<P> = (request: Request, params: P) => Promise<Response>

/** Wraps a route handler: awaits Next's params and funnels every failure through `toHttpError`. */
export function route<P = Record<string, never>>(handler: Handler<P>) {
  return async (request: Request, context: { params: Promise<P> }): Promise<Response> => {
    try {
      return await handler(request, (await context?.params) ?? ({} as P))
    } catch (error) {
      return toHttpError(error)
    }
  }
}

export function searchParamsOf(request: Request): Record<string, string> {
  return Object.fromEntries(new URL(request.url).searchParams)
}

export async function readJson<S extends z.ZodType>(request: Request, schema: S): Promise<z.infer<S>> {
  let body: unknown
  try {
    body = await request.json()
  } catch {
    throw new AppError('invalid', 'Request body must be valid JSON')
  }
  return schema.parse(body)
}
