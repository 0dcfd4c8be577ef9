import { waitFor } from './broker'

/** The management HTTP API as the broker's administrator (guest on loopback), for test setup and for waiting on stats. */
export const MANAGEMENT_URL = 'http://127.0.0.1:15672'
const ADMIN_AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`

export async function management(method: 'GET' | 'PUT' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Response> {
  return fetch(MANAGEMENT_URL + path, {
    method,
    headers: { authorization: ADMIN_AUTH, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

export async function managementJson<T = any>(path: string): Promise<T> {
  const response = await management('GET', path)
  if (!response.ok) throw new Error(`GET ${path}: HTTP ${response.status}`)
  return (await response.json()) as T
}

type QueueStats = { consumers?: number; consumer_details?: { consumer_tag: string }[]; message_stats?: { ack?: number } }

/**
 * Waits until the management API's view of a queue satisfies `check`. Its consumer counts and message statistics come
 * from the statistics database, which the broker refreshes every few seconds, not from the queue itself.
 */
export async function waitForQueueStats(queue: string, check: (q: QueueStats) => boolean, what: string, vhost = '/'): Promise<QueueStats> {
  return waitFor(
    async () => {
      const q = await managementJson<QueueStats>(`/api/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(queue)}`)
      return check(q) ? q : null
    },
    { timeoutMs: 30_000, intervalMs: 250, what },
  )
}
