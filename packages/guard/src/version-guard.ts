// Types only: the guard uses the application's own amqplib through the connection it is given.
import type { Channel, ConsumeMessage } from 'amqplib'
import { doubled, sleep } from './backoff'
import { extractEntityKey } from './entity-key'
import { extractEntityVersion, UNPARSABLE, VersionWindow } from './entity-version'
import { RELEASE_HEADER, REPLAY_ID_HEADER, type EntityKeyRule, type EntityVersionRule, type SupersededReport } from './protocol'

/** The guard option `versions`: "old must not overwrite new" (README, "Entity versions"). */
export type GuardVersionOptions = {
  /** Where a message's entity version lives: the source's version rule in Lazarus (Sources page). */
  rule: EntityVersionRule
  /** The source's entity-key rule; null or absent: the `x-entity-key` header, as in Lazarus. */
  entityKey?: EntityKeyRule | null
  /** Entities remembered at most (the one updated longest ago is forgotten first). Default 10,000. */
  maxEntities?: number
  /** How long a version is remembered after it was last raised. Default 60. */
  windowMinutes?: number
}

/** A replayed or released message the guard acked without handing it to the application. */
export type SupersededEvent = { queue: string; entityKey: string; version: number; supersededBy: number; replayId: string | null }

export type VersionGuard = {
  /**
   * For a message about to reach the handler: drops it (acks it on `channel`, reports it) when it came from Lazarus
   * and an entity version higher than its own was let through before; otherwise remembers its version and returns
   * false. Ordinary messages are never dropped.
   */
  dropIfSuperseded(channel: Channel, message: ConsumeMessage): boolean
}

const REPORT_ATTEMPTS = 5
const FETCH_TIMEOUT_MS = 5_000

function headerText(value: unknown): string | undefined {
  if (typeof value === 'string') return value
  if (value instanceof Uint8Array) return new TextDecoder().decode(value)
  return undefined
}

export function versionGuard(options: {
  versions: GuardVersionOptions
  queue: string
  vhost: string
  baseUrl: string
  instanceId: string
  token: string | null
  requestHeaders?: Record<string, string>
  fetch: typeof fetch
  retryDelayMs: number
  report: (error: unknown) => void
  onSuperseded?: (event: SupersededEvent) => void
  now?: () => number
}): VersionGuard {
  const { versions, queue, report } = options
  const window = new VersionWindow({ maxEntities: versions.maxEntities, windowMs: (versions.windowMinutes ?? 60) * 60_000, now: options.now })
  const keyRule = versions.entityKey ?? null

  /** Tells Lazarus, which records it on the job's item. Best effort, retried with backoff: the message is acked already. */
  async function tell(body: SupersededReport): Promise<void> {
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    for (const [name, value] of Object.entries(options.requestHeaders ?? {})) if (options.token === null || name.toLowerCase() !== 'authorization') headers[name] = value
    if (options.token !== null) headers.authorization = `Bearer ${options.token}`
    let delay = options.retryDelayMs
    for (let attempt = 1; attempt <= REPORT_ATTEMPTS; attempt++) {
      try {
        const response = await options.fetch(`${options.baseUrl}/api/guard/superseded`, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) })
        await response.body?.cancel().catch(() => {})
        // 4xx will not heal by retrying (an unknown replay id, a refused token): said once.
        if (response.ok || (response.status >= 400 && response.status < 500)) {
          if (!response.ok) report(new Error(`Lazarus refused the report of a superseded message (POST /api/guard/superseded answered HTTP ${response.status})`))
          return
        }
        throw new Error(`HTTP ${response.status}`)
      } catch (error) {
        if (attempt === REPORT_ATTEMPTS) return report(new Error(`cannot report a superseded message to Lazarus: ${(error as Error).message}`))
        await sleep(delay)
        delay = doubled(delay)
      }
    }
  }

  function dropIfSuperseded(channel: Channel, message: ConsumeMessage): boolean {
    const entityKey = extractEntityKey(keyRule, message)
    if (entityKey === null) return false
    const version = extractEntityVersion(versions.rule, message)
    if (version === null || version === UNPARSABLE) return false
    const headers = message.properties.headers ?? {}
    const replayId = headerText(headers[REPLAY_ID_HEADER])
    const release = headerText(headers[RELEASE_HEADER])
    const highest = window.highest(entityKey)
    if ((replayId !== undefined || release !== undefined) && highest !== null && version < highest) {
      try {
        channel.ack(message)
      } catch (error) {
        // A closed channel: the broker redelivers the message, and it is dropped again then.
        report(new Error(`cannot ack a superseded message: ${(error as Error).message}`))
        return true
      }
      options.onSuperseded?.({ queue, entityKey, version, supersededBy: highest, replayId: replayId ?? null })
      if (replayId !== undefined) void tell({ queue, vhost: options.vhost, instance: options.instanceId, replayId, entityKey, version, supersededBy: highest })
      return true
    }
    window.remember(entityKey, version)
    return false
  }

  return { dropIfSuperseded }
}
