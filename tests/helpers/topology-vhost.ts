import { randomBytes } from 'node:crypto'
import { management } from './management'

export type TestVhost = {
  name: string
  /** `amqp://guest:guest@127.0.0.1:5672/<vhost>`, for amqplib. */
  amqpUrl: string
  /** Deletes the vhost with everything in it. */
  remove(): Promise<void>
}

/** A unique vhost name, for a file that must name its vhost before creating it (in the environment, say). */
export const testVhostName = (prefix: string) => `__test_${prefix}_${randomBytes(4).toString('hex')}`

/**
 * A fresh vhost for one test of the topology doctor or builder, so the traps it builds cannot meet another test's
 * objects. guest (the broker's administrator on loopback) gets full permissions on it.
 */
export async function createTestVhost(prefix: string, name = testVhostName(prefix)): Promise<TestVhost> {
  const path = `/api/vhosts/${encodeURIComponent(name)}`
  const created = await management('PUT', path, {})
  if (!created.ok) throw new Error(`PUT ${path}: HTTP ${created.status}`)
  const permitted = await management('PUT', `/api/permissions/${encodeURIComponent(name)}/guest`, { configure: '.*', write: '.*', read: '.*' })
  if (!permitted.ok) throw new Error(`permissions on ${name}: HTTP ${permitted.status}`)
  return {
    name,
    amqpUrl: `amqp://guest:guest@127.0.0.1:5672/${encodeURIComponent(name)}`,
    async remove() {
      const removed = await management('DELETE', path)
      if (!removed.ok && removed.status !== 404) throw new Error(`DELETE ${path}: HTTP ${removed.status}`)
    },
  }
}
