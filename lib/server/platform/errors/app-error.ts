import 'server-only'

const STATUS = {
  invalid: 400,
  /** No credentials, or credentials that are not valid (any more). */
  unauthenticated: 401,
  /** Signed in, but the role does not allow it. */
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unprocessable: 422,
  rate_limited: 429,
  unavailable: 503,
} as const

export type AppErrorCode = keyof typeof STATUS

/** The one error type domain code throws for expected failures; `toHttpError` maps it to a response. */
export class AppError extends Error {
  override name = 'AppError'
  constructor(
    readonly code: AppErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message)
  }
  get status(): number {
    return STATUS[this.code]
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`)
