import 'server-only'
import { outsideRequest } from '@/lib/server/platform/request-context'

/**
 * An in-process nudge: code that made work for an engine wakes it at once instead of at its next poll (the replay
 * executor, when a job is created, approved, resumed or cancelled through this process's API; the drainer, when a
 * source changed). Engines in other processes find the work by polling. One of each per process, held by the
 * composition root (process/composition.ts).
 */
export class Signal {
  private readonly listeners = new Set<() => void | Promise<void>>()

  /** Calls `listener` on every notify; returns the function that stops it. */
  listen(listener: () => void | Promise<void>): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  notify(): void {
    void this.call()
  }

  /**
   * Notifies, then waits until every listener has done what it does (at most `waitMs`): the caller can say the work
   * is done here, not only asked for. A listener that cannot finish in time (its broker away) finishes later.
   */
  async notifyAndWait(waitMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.call(), new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))])
    clearTimeout(timer)
  }

  private call(): Promise<unknown> {
    // The engine's work is not the request's: its log lines and audit entries must not carry the request's id.
    return outsideRequest(() => Promise.allSettled([...this.listeners].map(async (listener) => listener())))
  }
}
