import 'server-only'
import { collectDefaultMetrics, Registry } from 'prom-client'
import { BrokerConnection } from '@/lib/server/platform/broker/connection'
import { ExchangePublisher } from '@/lib/server/platform/broker/exchange-publisher'
import { getConfig, type Config } from '@/lib/server/platform/config'
import { openDb, type Db } from '@/lib/server/platform/db'
import { perProcess, takePerProcess } from '@/lib/server/platform/per-process'
import { Signal } from '@/lib/server/platform/signal'

/**
 * What request-time code learns of the engines this process runs: health and the summary report the drainer's state.
 * `lib/server/platform/runtime/background.ts` registers them. Typed here without the engines' modules, which are
 * built on this one (docs/ARCHITECTURE.md#where-code-lives: no room imports a room above it).
 */
export type RunningEngines = {
  drainer: { status(): { state: string; brokerError: string | null } }
  /**
   * The ack times the topology doctor's sampler heard, per JetStream consumer (absent without LAZARUS_NATS_URL): Run
   * now judges ack_wait with them (docs/jetstream.md#the-doctors-jetstream-findings).
   */
  ackTimes?: () => { stream: string; consumer: string; samples: { ms: number; deliveries: number }[]; since: string }[]
  stop(): Promise<void>
}

/**
 * The process's composition root: everything there is one of per process, made here once and handed to the engines
 * and operations that use it through their options objects (docs/ARCHITECTURE.md#the-composition-root). Routes get it
 * from the route wrapper (`root` beside `db`), engines from `startBackground`, the worker and the CLI from
 * `composition()`. Nothing below it reaches for a process-wide value of its own.
 */
export type Composition = {
  /** The database, opened and migrated on first use (a failed open is tried again by the next call). */
  db(): Promise<Db>
  /**
   * Broker connections owned by the process, not by the code that uses them (the drainer and the replay executor own
   * theirs): `control` carries pause events, and the pause runtime declares the pause topology on it; `health` stays
   * open for the health check's channel, so a probe polled every few seconds does not churn connections.
   */
  brokers: { control: BrokerConnection; health: BrokerConnection }
  /** Publishes pause and resume events on lazarus.control (LAZARUS_CONTROL_EXCHANGE), on the control connection. */
  control: ExchangePublisher
  /** Wakes the replay executor of this process when its API created, approved, resumed or cancelled a job. */
  replayWork: Signal
  /** Makes this process's drainer apply a source its API added, changed or removed, before the API answers. */
  sourcesChanged: Signal
  /** Process metrics (memory, event-loop lag, GC), which keep state between scrapes; made on first use. */
  processMetrics(): Registry
  /** The engines, once `startBackground` started them here (null: not started, or this process only serves). */
  engines: Promise<RunningEngines> | null
  /** Installs a database opened elsewhere (tests, the benchmarks' children); its opener closes it. */
  setDb(db: Db | undefined): void
  /** Closes the broker connections, and the database if this root opened it. */
  close(): Promise<void>
}

export type CompositionOptions = {
  config?: Pick<Config, 'AMQP_URL' | 'LAZARUS_CONTROL_EXCHANGE'>
  /** A database opened by the caller, which stays the caller's to close. */
  db?: Db
}

export function createComposition(options: CompositionOptions = {}): Composition {
  const config = options.config ?? getConfig()
  // Opened by whichever caller asks first (often a request), then shared: BrokerConnection connects outside it.
  const brokers = {
    control: new BrokerConnection({ url: config.AMQP_URL, name: 'lazarus-control' }),
    health: new BrokerConnection({ url: config.AMQP_URL, name: 'lazarus-health' }),
  }
  let db: { opened: Promise<Db>; owned: boolean } | null = options.db ? { opened: Promise.resolve(options.db), owned: false } : null
  let metrics: Registry | null = null
  return {
    brokers,
    control: new ExchangePublisher({ connection: brokers.control, exchange: config.LAZARUS_CONTROL_EXCHANGE, type: 'topic' }),
    replayWork: new Signal(),
    sourcesChanged: new Signal(),
    engines: null,
    db() {
      if (!db) {
        const opening = { opened: openDb(), owned: true }
        db = opening
        opening.opened.catch(() => {
          if (db === opening) db = null
        })
      }
      return db.opened
    },
    setDb(given) {
      db = given ? { opened: Promise.resolve(given), owned: false } : null
    },
    processMetrics() {
      if (!metrics) {
        metrics = new Registry()
        collectDefaultMetrics({ register: metrics, prefix: 'lazarus_' })
      }
      return metrics
    },
    async close() {
      await Promise.all([brokers.control.close(), brokers.health.close()])
      const owned = db?.owned ? db.opened : null
      db = null
      await (await owned?.catch(() => null))?.close()
    },
  }
}

/** The engines running in this process, if any (the web process may run without them). */
export async function runningEngines(root: Pick<Composition, 'engines'>): Promise<RunningEngines | null> {
  // A start that failed was logged where it was started (boot-web, the worker's main); here it means none runs.
  return (await root.engines?.catch(() => null)) ?? null
}

/** The process's composition root, made on first use (per-process.ts says why it is kept on globalThis). */
export function composition(): Composition {
  return perProcess('composition', () => createComposition())
}

/** Closes the process's root (shutdown, the end of a test file); the next `composition()` makes a new one. */
export async function closeComposition(): Promise<void> {
  await takePerProcess<Composition>('composition')?.close()
}
