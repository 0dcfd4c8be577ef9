/** The longest the guard waits before retrying a fetch, a channel or a hold: it keeps trying, but gently. */
export const MAX_RETRY_DELAY_MS = 30_000

/** The next retry delay: twice the last one, at most MAX_RETRY_DELAY_MS. */
export function doubled(delayMs: number): number {
  return Math.min(delayMs * 2, MAX_RETRY_DELAY_MS)
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
