import 'server-only'
import type { BrokerConnection } from '@/lib/server/platform/broker/connection'
import type { Db } from '@/lib/server/platform/db'
import { runningEngines, type RunningEngines } from '@/lib/server/platform/process/composition'

type DrainerReport = ReturnType<RunningEngines['drainer']['status']>

export type Health = {
  status: 'ok' | 'degraded'
  db: { ok: boolean; kind: string | null; error: string | null }
  broker: { ok: boolean; error: string | null }
  drainer: Pick<DrainerReport, 'state' | 'brokerError'> | { state: 'not-running-here' }
}

export type GetHealthOptions = {
  db: Db
  /**
   * The process's health connection (the composition root's): kept open and recovering on its own, because a probe
   * polled every few seconds must not open and close a connection each time (RabbitMQ's connection churn).
   */
  broker: BrokerConnection
  /** The composition root's running engines, whose drainer state is reported. */
  engines: Promise<RunningEngines> | null
}

// The last broker check of each health connection, so probes polled every few seconds cost one channel per 5 seconds.
const brokerChecks = new WeakMap<BrokerConnection, { at: number; value: Health['broker'] }>()

/** A channel opened and closed on the health connection, at most every 5 seconds: the broker answered within 3. */
async function checkBroker(broker: BrokerConnection): Promise<Health['broker']> {
  const cached = brokerChecks.get(broker)
  if (cached && Date.now() - cached.at < 5_000) return cached.value
  let value: Health['broker']
  try {
    await withTimeout(broker.withChannel(async () => {}, { waitMs: 3_000 }), 3_000)
    value = { ok: true, error: null }
  } catch (error) {
    value = { ok: false, error: (error as Error).message }
  }
  brokerChecks.set(broker, { at: Date.now(), value })
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

export async function getHealth({ db, broker, engines }: GetHealthOptions): Promise<Health> {
  const [database, brokerHealth, running] = await Promise.all([checkDb(db), checkBroker(broker), runningEngines({ engines })])
  const drainer = running ? (({ state, brokerError }) => ({ state, brokerError }))(running.drainer.status()) : { state: 'not-running-here' as const }
  return { status: database.ok && brokerHealth.ok ? 'ok' : 'degraded', db: database, broker: brokerHealth, drainer }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms))])
}
