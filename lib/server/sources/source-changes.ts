import 'server-only'
import type { Signal } from '@/lib/server/platform/signal'

/**
 * Longest a source change through the API waits for this process's drainer to apply it (the root's `sourcesChanged`
 * signal): then "saved" means "applied" in a single-process deployment. Drainers in other processes apply it at their
 * next reconcile (LAZARUS_DRAIN_RECONCILE_MS); one that cannot apply it now (its broker away) applies it later, and
 * the change is committed either way.
 */
export const APPLY_WAIT_MS = 5_000

export type SourceChangeOptions = {
  /** The composition root's `sourcesChanged`; without it (scripts, the CLI) drainers apply the change when they reconcile. */
  sourcesChanged?: Signal
}
