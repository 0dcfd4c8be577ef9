import { randomBytes } from 'node:crypto'
// Through the app's wrapper: it must patch amqplib's codec before anything loads amqplib; its plain view is stock.
import { connect } from '@/lib/server/platform/broker/amqplib'

export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'

export const uniqueName = (prefix: string) => `__test_${prefix}_${randomBytes(4).toString('hex')}`

/** An amqplib connection for test setup (publishing, declaring). */
export async function brokerConnection() {
  const connection = await connect(AMQP_URL)
  connection.on('error', () => {})
  return connection
}

export async function queueDepth(queue: string): Promise<number> {
  const connection = await brokerConnection()
  try {
    const channel = await connection.createChannel()
    const { messageCount } = await channel.checkQueue(queue)
    return messageCount
  } finally {
    await connection.close()
  }
}

export async function waitFor<T>(check: () => Promise<T | undefined | null | false>, options: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000)
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${options.what ?? 'condition'}`)
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 100))
  }
}
