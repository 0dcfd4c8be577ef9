import { parsePauseList } from './protocol'
import { withRegistryVersion, type PollRequest } from './poll-request'
import type { PauseRegistry } from './registry'

/** Events published together (a replay pausing many entities) arrive within a few milliseconds: one read for all. */
const EVENT_COALESCE_MS = 20
/** A refused token is written to the console at most this often (onError hears every time). */
const SHOUT_INTERVAL_MS = 60_000
const FETCH_TIMEOUT_MS = 5_000

export type PauseViewOptions = {
  /** Where the list read last is kept; the guard's only source of pauses. */
  registry: PauseRegistry
  queue: string
  /** Lazarus' base URL, for messages. */
  baseUrl: string
  request: PollRequest
  /** Whether a token is sent: a refusal says what to do about it. */
  tokenSent: boolean
  fetch: typeof fetch
  pollIntervalMs: number
  minRefreshIntervalMs: number
  startTimeoutMs: number
  retryDelayMs: number
  report: (error: unknown) => void
  /** Called after the registry changed (a list was read, or the pauses were dropped). */
  onChange: () => void
  isClosed: () => boolean
}

export type PauseView = {
  /** Starts polling: a first read at once, then every pollIntervalMs (sooner while reads fail). */
  start(): void
  /** Re-reads the list now (single flight); resolves once a read that started after this call has ended. */
  refresh(): Promise<void>
  /** Asks for a re-read soon, on behalf of a control event. */
  refreshSoon(): void
  /** Resolves once no re-read is due (asked for by an event, or confirming a new version) or running. */
  settled(): Promise<void>
  /** Resolves once a list was read, or after startTimeoutMs. */
  ready(): Promise<void>
  /** Stops the timers and releases whoever still waits in ready(). */
  stop(): void
}

/** Lazarus answered 401 or 403: only a person can fix it (the `token` option), so it is reported apart. */
class RefusedError extends Error {}

/**
 * The guard's view of the pauses (docs/ARCHITECTURE.md#pause-hold-release): the list GET /api/pauses answered last,
 * re-read on a timer (in case an event was lost) and soon after every control event. It never goes stale silently:
 * a refused token drops what was read before, and a list that never arrives stops blocking `ready()` after
 * startTimeoutMs.
 */
export function pauseView(options: PauseViewOptions): PauseView {
  const { registry, queue, baseUrl, request, report, onChange, isClosed } = options
  let loadedResolve: () => void = () => {}
  const loaded = new Promise<void>((resolve) => (loadedResolve = resolve))
  let refreshing: Promise<void> | null = null
  let refreshAgain = false
  let pollTimer: NodeJS.Timeout | null = null
  let eventTimer: NodeJS.Timeout | null = null
  /** Resolves when eventTimer fires or is cleared. */
  let eventDue: Promise<void> = Promise.resolve()
  let eventDueResolve: () => void = () => {}
  let lastFetchAt = -Infinity
  let lastShoutAt = -Infinity
  let fetchFailures = 0

  async function fetchList(): Promise<void> {
    lastFetchAt = Date.now()
    const held = registry.isLoaded ? registry.version : -1
    const response = await options.fetch(withRegistryVersion(request.url, held), { headers: request.headers, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) })
    if (response.status === 401 || response.status === 403) {
      // Only the status matters; a body that cannot be cancelled is released with the response anyway.
      await response.body?.cancel().catch(() => {})
      throw new RefusedError(
        `Lazarus refused this guard's pause-list request (GET ${baseUrl}/api/pauses answered HTTP ${response.status}): ` +
          (options.tokenSent
            ? 'the token in the guard option `token` was not accepted (unknown, revoked, expired, or not a guard token for this queue); create a new one in Lazarus. '
            : 'no token was sent; set the guard option `token` to a guard-scoped API token created in Lazarus for this queue. ') +
          'Until Lazarus answers, this guard knows no pauses and holds nothing; it keeps asking.',
      )
    }
    if (!response.ok) throw new Error(`GET ${baseUrl}/api/pauses answered HTTP ${response.status}`)
    const list = parsePauseList(await response.json())
    if (!list) throw new Error(`GET ${baseUrl}/api/pauses answered something that is not a pause list`)
    registry.replace(list)
    loadedResolve()
    onChange()
    // A new version is confirmed by a poll soon after (at most one per minRefreshIntervalMs, like events): Lazarus
    // then knows this guard holds it (docs/ARCHITECTURE.md#pause-hold-release, "Who listens").
    if (list.version !== held) refreshSoon()
  }

  /**
   * A refused token does not heal by itself: onError hears it every time and the console at most once a minute, so
   * it stands out in the application's log without flooding it. The pauses read before are dropped: the guard can no
   * longer learn that they ended, and a pause never heard resumed would hold the entity (or stop the consumer) for
   * good. Holding nothing keeps every message flowing to the handler, where a failure still dead-letters it.
   */
  function refused(error: RefusedError) {
    report(error)
    if (Date.now() - lastShoutAt >= SHOUT_INTERVAL_MS) {
      lastShoutAt = Date.now()
      console.error(`[lazarus-guard] ${queue}: ${error.message}`)
    }
    if (registry.isLoaded || registry.list().length > 0) {
      registry.forget()
      onChange()
    }
  }

  /** Single flight; a call while a fetch runs schedules one more, so the answer is never older than the call. */
  function refresh(): Promise<void> {
    if (isClosed()) return Promise.resolve()
    if (refreshing) {
      refreshAgain = true
      return refreshing
    }
    refreshing = (async () => {
      do {
        refreshAgain = false
        try {
          await fetchList()
          fetchFailures = 0
        } catch (error) {
          fetchFailures++
          if (error instanceof RefusedError) refused(error)
          else report(new Error(`cannot read the pause list: ${(error as Error).message}`))
        }
      } while (refreshAgain && !isClosed())
    })().finally(() => {
      refreshing = null
    })
    return refreshing
  }

  function schedulePoll() {
    if (isClosed()) return
    // Until a list was loaded, or after failures, retry sooner than the regular poll.
    const { pollIntervalMs, retryDelayMs } = options
    const delay = !registry.isLoaded || fetchFailures > 0 ? Math.min(retryDelayMs * 2 ** Math.min(fetchFailures, 5), pollIntervalMs) : pollIntervalMs
    pollTimer = setTimeout(async () => {
      await refresh()
      schedulePoll()
    }, delay)
    pollTimer.unref?.()
  }

  /**
   * An event asks for a re-read soon: after a few milliseconds (events published together need one read), and never
   * sooner than minRefreshIntervalMs after the previous read, so a flood of events costs Lazarus one request per
   * interval and per guard. Events meanwhile join the read already scheduled, which starts after all of them arrived.
   */
  function refreshSoon() {
    if (isClosed() || eventTimer) return
    const wait = Math.max(EVENT_COALESCE_MS, lastFetchAt + options.minRefreshIntervalMs - Date.now())
    eventDue = new Promise((resolve) => (eventDueResolve = resolve))
    eventTimer = setTimeout(() => {
      eventTimer = null
      // The read starts before anyone waiting in settled() looks again, so they wait for it too.
      void refresh()
      eventDueResolve()
    }, wait)
    eventTimer.unref?.()
  }

  /**
   * A re-read due or running is waited for, and so is the one it may ask for in turn (a new version is confirmed by a
   * poll soon after). The regular poll's timer does not count: it is always due.
   */
  async function settled(): Promise<void> {
    for (;;) {
      if (refreshing) await refreshing
      else if (eventTimer) await eventDue
      else return
    }
  }

  let readyPromise: Promise<void> | null = null
  function ready(): Promise<void> {
    const { startTimeoutMs } = options
    readyPromise ??= (async () => {
      if (!Number.isFinite(startTimeoutMs)) return loaded
      let timer: NodeJS.Timeout | undefined
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), startTimeoutMs)))
      const outcome = await Promise.race([loaded.then(() => 'loaded' as const), timedOut])
      clearTimeout(timer)
      // Without a list the guard holds nothing: the application consumes as it did before it had a guard, so no message
      // is held where nobody releases it, or dropped; the risk is ordering (a paused entity's message goes through).
      // Waiting instead would stop the application, and grow its queue, for as long as Lazarus is unreachable or
      // refuses the token. `startTimeoutMs: Infinity` chooses waiting.
      if (outcome === 'timeout') report(new Error(`no pause list from ${baseUrl} after ${startTimeoutMs} ms; consuming without pauses (holding nothing) until it answers`))
    })()
    return readyPromise
  }

  return {
    start: () => void refresh().then(schedulePoll),
    refresh,
    refreshSoon,
    settled,
    ready,
    stop() {
      if (pollTimer) clearTimeout(pollTimer)
      if (eventTimer) clearTimeout(eventTimer)
      eventTimer = null
      eventDueResolve()
      loadedResolve()
    },
  }
}
