import 'server-only'
import { BrokerConnection } from '@/lib/server/platform/broker/connection'
import { getConfig } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { currentBackground } from '@/lib/server/platform/runtime/background'
import type { DrainerStatus } from '@/lib/server/engines/drainer/drainer'

export type Health = {
  status: 'ok' | 'degraded'
  db: { ok: boolean; kind: string | null; error: string | null }
  broker: { ok: boolean; error: string | null }
  drainer: Pick<DrainerStatus, 'state' | 'brokerError'> | { state: 'not-running-here' }
}

let brokerCache: { at: number; value: Health['broker'] } | null = null
const globalForHealth = globalThis as unknown as { lazarusHealthBroker?: BrokerConnection }

/**
 * A channel opened and closed on the process's health connection, at most every 5 seconds: the broker answered
 * within 3. The connection stays open and recovers on its own (a probe polled every few seconds must not open and
 * close a connection each time: RabbitMQ's connection churn).
 */
async function checkBroker(): Promise<Health['broker']> {
  if (brokerCache && Date.now() - brokerCache.at < 5_000) return brokerCache.value
  let value: Health['broker']
  try {
    const broker = (globalForHealth.lazarusHealthBroker ??= new BrokerConnection({ url: getConfig().AMQP_URL, name: 'lazarus-health' }))
    await withTimeout(broker.withChannel(async () => {}, { waitMs: 3_000 }), 3_000)
    value = { ok: true, error: null }
  } catch (error) {
    value = { ok: false, error: (error as Error).message }
  }
  brokerCache = { at: Date.now(), value }
  return value
}

async function checkDb({ sql }: Db): Promise<Health['db']> {
  try {
    await withTimeout(sql.query('SELECT 1'), 3_000)
    return { ok: true, kind: sql.kind, error: null }
  } catch (error) {
    return { ok: false, kind: null, error: (error as Error).message }
  }
}

export async function getHealth({ db }: { db: Db }): Promise<Health> {
  const [database, broker, background] = await Promise.all([checkDb(db), checkBroker(), currentBackground()])
  const drainer = background ? (({ state, brokerError }) => ({ state, brokerError }))(background.drainer.status()) : { state: 'not-running-here' as const }
  return { status: database.ok && broker.ok ? 'ok' : 'degraded', db: database, broker, drainer }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms))])
}
