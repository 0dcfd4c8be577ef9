import 'server-only'

/**
 * Lazarus' one slot on globalThis, for what there must be exactly one of in a process.
 *
 * Why a global at all: Next.js loads server code more than once in one process. `instrumentation.ts` (which starts
 * the engines), the route handlers and the pages are separate bundles, each with its own copy of every module it
 * imports, and the HTTP front (`lib/server/platform/http/front.ts`) runs unbundled beside them (`lib/cli/serve.ts`).
 * A module-level variable is therefore one per copy, not one per process, and only globalThis is shared by all copies.
 * What a request enters in one copy (its id), what the front marks in another, and the composition root
 * (`lib/server/platform/process/composition.ts`: the database, the broker connections, the signals and the metrics
 * registry every copy must share) live here, each under its name; nothing else in lib/ touches globalThis.
 */
type Slot = {
  /** The request being served (request-context.ts): entered by the route wrapper, read by every copy's logger. */
  'request-context'?: unknown
  /** The log level and output (log.ts): set once from the configuration, or by a test. */
  log?: unknown
  /** Whether the front serves this process (request-facts.ts): marked by the unbundled front, read by the routes. */
  front?: unknown
  /** The composition root (process/composition.ts). */
  composition?: unknown
}

const SLOT = Symbol.for('lazarus.process')

/** The process's one `name`, made by `create` in whichever copy of the calling module asks first. */
export function perProcess<T>(name: keyof Slot, create: () => T): T {
  const slot = ((globalThis as Record<symbol, Slot | undefined>)[SLOT] ??= {})
  return (slot[name] ??= create()) as T
}

/** Takes the process's `name` out, if made: the next perProcess makes a new one (the composition root, once closed). */
export function takePerProcess<T>(name: keyof Slot): T | undefined {
  const slot = (globalThis as Record<symbol, Slot | undefined>)[SLOT]
  const value = slot?.[name] as T | undefined
  if (slot) delete slot[name]
  return value
}
