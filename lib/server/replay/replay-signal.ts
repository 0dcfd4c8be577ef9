import 'server-only'
import { outsideRequest } from '@/lib/server/platform/request-context'

type Listener = () => void
const globalForSignal = globalThis as unknown as { lazarusReplayListeners?: Set<Listener> }
const listeners = (globalForSignal.lazarusReplayListeners ??= new Set())

/**
 * In-process nudge for the replay executor: a job created or cancelled through this process's API is picked up at
 * once instead of at the next poll. Executors in other processes find it by polling.
 */
export function onReplayWork(listener: Listener): () => void {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

export function signalReplayWork(): void {
  // The executor's work is not the request's: its log lines and audit entries must not carry the request's id.
  outsideRequest(() => {
    for (const listener of listeners) listener()
  })
}
