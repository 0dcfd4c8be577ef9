import 'server-only'

/** A pause an engine's loop takes between rounds, which stop() cuts short. */
export type InterruptibleRest = { rest(ms: number): Promise<void>; interrupt(): void }

/** One per loop: `rest` waits up to `ms`; `interrupt` ends the wait under way at once (and is a no-op without one). */
export function interruptibleRest(): InterruptibleRest {
  let wake: (() => void) | null = null
  return {
    rest: (ms) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          wake = null
          resolve()
        }, ms)
        wake = () => {
          clearTimeout(timer)
          wake = null
          resolve()
        }
      }),
    interrupt: () => wake?.(),
  }
}
