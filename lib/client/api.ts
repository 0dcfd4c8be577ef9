/** Browser-side access to the HTTP API: one fetcher, one error type carrying the API's error envelope. */

export type ApiIssue = { path: (string | number)[]; message: string }

export class ApiError extends Error {
  override name = 'ApiError'
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message)
  }

  /** Zod issues of a 400, keyed by dotted field path ("entityKey.pointer"), for messages next to form fields. */
  fieldErrors(): Record<string, string> {
    const out: Record<string, string> = {}
    if (!Array.isArray(this.details)) return out
    for (const issue of this.details as ApiIssue[]) {
      if (!issue || !Array.isArray(issue.path) || typeof issue.message !== 'string') continue
      const key = issue.path.join('.') || 'input'
      out[key] ??= issue.message
    }
    return out
  }
}

export function toQueryString(params: Record<string, string | undefined | null>): string {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') search.set(key, value)
  const text = search.toString()
  return text ? `?${text}` : ''
}

/**
 * A 401 means the session ended (idle or absolute limit, sign-out elsewhere, revoked): go to the sign-in page and
 * come back here afterwards.
 */
function signInAgain(response: Response): void {
  if (response.status !== 401 || typeof window === 'undefined') return
  const here = window.location.pathname + window.location.search
  if (window.location.pathname.startsWith('/sign-in')) return
  // A full page load: the expired session's cached queries must not outlive it (see components/layout/user-menu.tsx).
  // eslint-disable-next-line @next/next/no-location-assign-relative-destination
  window.location.assign(`/sign-in?next=${encodeURIComponent(here)}&expired=1`)
}

async function errorFrom(response: Response): Promise<ApiError> {
  signInAgain(response)
  let body: unknown
  try {
    body = await response.json()
  } catch {
    body = null
  }
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error
  const message = typeof error?.message === 'string' && error.message ? error.message : `${response.status} ${response.statusText || 'request failed'}`
  return new ApiError(response.status, typeof error?.code === 'string' ? error.code : 'http_error', message, error?.details)
}

export async function apiGet<T>(path: string, options: { signal?: AbortSignal } = {}): Promise<T> {
  const response = await fetch(path, { signal: options.signal, headers: { accept: 'application/json' }, cache: 'no-store' })
  if (!response.ok) throw await errorFrom(response)
  return (await response.json()) as T
}

/**
 * A mutating request. Always JSON (also without a body): the server refuses a cookie-authenticated change that is
 * not, since a page of another site cannot send JSON without a preflight (cross-site request forgery).
 */
export async function apiSend<T>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown, options: { signal?: AbortSignal } = {}): Promise<T> {
  const response = await fetch(path, {
    method,
    signal: options.signal,
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (!response.ok) throw await errorFrom(response)
  // A DELETE answers 204 No Content.
  if (response.status === 204) return undefined as T
  return (await response.json()) as T
}

export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) return error.message
  if (error instanceof Error) return error.message
  return 'Something went wrong'
}
