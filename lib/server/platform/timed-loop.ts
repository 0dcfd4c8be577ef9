import 'server-only'

export type TimedLoop = { stop(): Promise<void> }

export type StartTimedLoopOptions = {
  /** One round. `stopping()` turns true once stop() was called, so a long round can end early. */
  round: (stopping: () => boolean) => Promise<void>
  /** A round that throws is reported here and the loop goes on at the next interval: it holds nothing in memory. */
  onError: (error: Error) => void
  firstAfterMs: number
  everyMs: number
}

/**
 * Runs `round` after `firstAfterMs`, then `everyMs` after each round ends (never two at once, never piling up behind a
 * slow round). stop() waits for the round under way, so a caller that stops and then closes the database pool never
 * pulls it from under a running transaction. The alert evaluator and retention are such loops.
 */
export function startTimedLoop({ round, onError, firstAfterMs, everyMs }: StartTimedLoopOptions): TimedLoop {
  let stopped = false
  let timer: NodeJS.Timeout | null = null
  let running: Promise<void> = Promise.resolve()
  const tick = () => {
    timer = null
    running = (async () => {
      try {
        await round(() => stopped)
      } catch (error) {
        onError(error as Error)
      }
      if (!stopped) timer = setTimeout(tick, everyMs)
    })()
  }
  timer = setTimeout(tick, firstAfterMs)
  return {
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await running
    },
  }
}
