import 'server-only'
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible'
import type { SignedIn } from '@/lib/server/auth/principal'
import type { Config } from '@/lib/server/platform/config'
import { AppError } from '@/lib/server/platform/errors/app-error'

/**
 * Per-caller limits of this web process (docs/security.md, "Limits"): requests in progress, mutations and exports
 * per minute, exports at once. They keep one user or script from holding the whole database pool or starving
 * everyone else; several web processes each apply them. Counting is rate-limiter-flexible's in-memory limiter.
 */
type Limits = {
  mutations: RateLimiterMemory
  exports: RateLimiterMemory
  concurrentRequests: number
  concurrentExports: number
}

const inFlight = new Map<string, number>()
const exportsRunning = new Map<string, number>()
let limits: { key: string; value: Limits } | undefined

function limitsFor(config: Config): Limits {
  const key = `${config.LAZARUS_MUTATIONS_PER_MINUTE}|${config.LAZARUS_EXPORTS_PER_MINUTE}|${config.LAZARUS_CONCURRENT_REQUESTS}|${config.LAZARUS_CONCURRENT_EXPORTS}`
  if (limits?.key !== key) {
    limits = {
      key,
      value: {
        mutations: new RateLimiterMemory({ points: config.LAZARUS_MUTATIONS_PER_MINUTE, duration: 60 }),
        exports: new RateLimiterMemory({ points: config.LAZARUS_EXPORTS_PER_MINUTE, duration: 60 }),
        concurrentRequests: config.LAZARUS_CONCURRENT_REQUESTS,
        concurrentExports: config.LAZARUS_CONCURRENT_EXPORTS,
      },
    }
  }
  return limits.value
}

function rateLimited(message: string, retryAfterMs: number): AppError {
  return new AppError('rate_limited', message, { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) })
}

async function consume(limiter: RateLimiterMemory, caller: string, what: string): Promise<void> {
  try {
    await limiter.consume(caller)
  } catch (error) {
    if (error instanceof RateLimiterRes) throw rateLimited(`Too many ${what}; try again in ${Math.ceil(error.msBeforeNext / 1000)} s`, error.msBeforeNext)
    throw error
  }
}

function acquire(map: Map<string, number>, caller: string, max: number, message: string): () => void {
  const now = map.get(caller) ?? 0
  if (now >= max) throw rateLimited(message, 1000)
  map.set(caller, now + 1)
  let released = false
  return () => {
    if (released) return
    released = true
    const left = (map.get(caller) ?? 1) - 1
    if (left <= 0) map.delete(caller)
    else map.set(caller, left)
  }
}

/** The key per-caller limits count under: a token on its own, a person across their sessions. */
export function callerKey(p: SignedIn): string {
  return p.tokenId ? `token:${p.tokenId}` : p.userId ? `user:${p.userId}` : `actor:${p.actor}`
}

/** Counts a request of `caller` as in progress; the returned function ends it. */
export function beginRequest(config: Config, caller: string): () => void {
  return acquire(inFlight, caller, limitsFor(config).concurrentRequests, 'Too many requests in progress for this user; wait for some to finish')
}

export function countMutation(config: Config, caller: string): Promise<void> {
  return consume(limitsFor(config).mutations, caller, 'changes this minute')
}

/** Takes one of the caller's export slots (rate and concurrency); release it when the download ends. */
export async function beginExport(config: Config, caller: string): Promise<() => void> {
  const release = acquire(exportsRunning, caller, limitsFor(config).concurrentExports, 'Too many exports running for this user; wait for one to finish')
  try {
    await consume(limitsFor(config).exports, caller, 'exports this minute')
  } catch (error) {
    release()
    throw error
  }
  return release
}

/** A response body that calls `onEnd` once when it has been read to the end, failed, or the client went away. */
export function releaseWhenDone(body: ReadableStream<Uint8Array>, onEnd: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read()
        if (done) {
          onEnd()
          controller.close()
        } else controller.enqueue(value)
      } catch (error) {
        onEnd()
        controller.error(error)
      }
    },
    async cancel(reason) {
      onEnd()
      await reader.cancel(reason)
    },
  })
}
