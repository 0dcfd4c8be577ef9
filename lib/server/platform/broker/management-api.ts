import 'server-only'
import { z } from 'zod'
import { getConfig } from '@/lib/server/platform/config'

const queueInfo = z.object({
  name: z.string(),
  vhost: z.string(),
  messages: z.number().optional(),
  consumers: z.number().optional(),
})
export type QueueInfo = { name: string; vhost: string; messages: number | null; consumers: number | null }

function endpoint(path: string): { url: string; headers: Record<string, string> } {
  const base = new URL(getConfig().RABBITMQ_MANAGEMENT_URL)
  const auth = base.username ? Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64') : null
  base.username = ''
  base.password = ''
  const url = new URL(path, base).toString()
  return { url, headers: auth ? { authorization: `Basic ${auth}` } : {} }
}

/** A non-2xx answer of the management API; callers tell "not there" (404) from the rest by `status`. */
export class ManagementApiError extends Error {
  override name = 'ManagementApiError'

  constructor(
    readonly path: string,
    readonly status: number,
  ) {
    super(`management API ${path}: HTTP ${status}`)
  }
}

/** The management API answered that the object does not exist (a queue, an exchange, a vhost). */
export const isManagementNotFound = (error: unknown): boolean => error instanceof ManagementApiError && error.status === 404

/**
 * GET a management API path (read-only); throws ManagementApiError on a non-2xx answer, and fetch's own errors (a
 * TypeError, or the timeout's DOMException) when there is no answer.
 */
export async function getJson(path: string, timeoutMs = 2_000): Promise<unknown> {
  const { url, headers } = endpoint(path)
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) })
  if (!response.ok) throw new ManagementApiError(path, response.status)
  return response.json()
}

/**
 * POST to a management API path. Only for the doctor's opt-in sample of a classic queue (`/get` with
 * `ack_requeue_true`, which puts the messages back: docs/topology.md#sampling); nothing else here writes.
 */
export async function postJson(path: string, body: unknown, timeoutMs = 2_000): Promise<unknown> {
  const { url, headers } = endpoint(path)
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  })
  if (!response.ok) throw new ManagementApiError(path, response.status)
  return response.json()
}

/** Queue depths for a vhost through the management API (read-only, paged, only the columns we need). */
export async function listQueues(vhost: string): Promise<QueueInfo[]> {
  const path = `/api/queues/${encodeURIComponent(vhost)}?page=1&page_size=500&columns=name,vhost,messages,consumers`
  const body = z.object({ items: z.array(queueInfo) }).parse(await getJson(path))
  return body.items.map((q) => ({ name: q.name, vhost: q.vhost, messages: q.messages ?? null, consumers: q.consumers ?? null }))
}

