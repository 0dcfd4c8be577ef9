import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { PausePollQuery } from './protocol'
import { GUARD_VERSION } from './version'

/**
 * The request a guard polls GET /api/pauses with. The poll is also its heartbeat: the query names the queue, the
 * vhost, this guard's instance id and version, and Lazarus records which guard protects which queue
 * (docs/ARCHITECTURE.md#tables, `guard_heartbeats`).
 */
export type PollRequest = { url: string; headers: Record<string, string> }

/** The poll's URL with the registry version the guard holds (none before its first list: `version` < 0). */
export function withRegistryVersion(url: string, version: number): string {
  return version < 0 ? url : `${url}&${new URLSearchParams({ registryVersion: String(version) })}`
}

/**
 * The `token` option, trimmed (a secret read from a file often ends in a newline); null when empty. A token no HTTP
 * header can carry is a configuration error that can never work: it is refused here, without echoing it, rather than
 * on every poll by fetch, whose message would quote the secret into the application's log.
 */
export function guardToken(value: string | undefined): string | null {
  const token = value?.trim() ?? ''
  if (token === '') return null
  if (!/^[\x21-\x7e]+$/.test(token)) throw new TypeError('lazarus guard: the `token` option holds characters an HTTP header cannot carry (spaces, line breaks or non-ASCII); copy the token again')
  return token
}

/** Unique per guard: which process on which host polls (hostnames are cut, the random part tells two guards apart). */
export function newInstanceId(): string {
  let host = 'unknown-host'
  try {
    host = hostname().replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100) || host
  } catch {
    // Some sandboxes refuse os.hostname(); the pid and random part still tell guards apart.
  }
  return `${host}-${process.pid}-${randomBytes(4).toString('hex')}`
}

export function pollRequest(options: {
  baseUrl: string
  queue: string
  vhost: string
  instanceId: string
  token: string | null
  requestHeaders?: Record<string, string>
}): PollRequest {
  const { token } = options
  const query: PausePollQuery = { queue: options.queue, vhost: options.vhost, instance: options.instanceId, guardVersion: GUARD_VERSION }
  const headers: Record<string, string> = { accept: 'application/json' }
  for (const [name, value] of Object.entries(options.requestHeaders ?? {})) {
    // Two Authorization headers would be merged into one invalid value; the token is the one Lazarus checks.
    if (token !== null && name.toLowerCase() === 'authorization') continue
    headers[name] = value
  }
  if (token !== null) headers.authorization = `Bearer ${token}`
  return { url: `${options.baseUrl}/api/pauses?${new URLSearchParams(query)}`, headers }
}
