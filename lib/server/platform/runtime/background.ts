import 'server-only'
import { startAlertLoop } from '@/lib/server/engines/alert-evaluator/alert-loop'
import { startGroupFramesBackfill } from '@/lib/server/engines/group-frames/group-frames-backfill'
import { getConfig } from '@/lib/server/platform/config'
import { getDb } from '@/lib/server/platform/db'
import { startDrainer, type Drainer } from '@/lib/server/engines/drainer/drainer'
import { logger } from '@/lib/server/platform/log'
import { startPauseRuntime } from '@/lib/server/engines/release/pause-runtime'
import { startReplayExecutor, type ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { startRetentionLoop } from '@/lib/server/engines/retention/retention-loop'
import { startSearchIndexer, type SearchIndexer } from '@/lib/server/engines/search-indexer/search-indexer'
import { startTopologyDoctor } from '@/lib/server/engines/topology-doctor/topology-doctor-loop'
import { ensureSources } from '@/lib/server/sources/create-source'

const log = logger('runtime')
const globalForRuntime = globalThis as unknown as { lazarusBackground?: Promise<Background> }

export type Background = { drainer: Drainer; searchIndexer: SearchIndexer; replay: ReplayExecutor; stop(): Promise<void> }

async function start(): Promise<Background> {
  const config = getConfig()
  const db = await getDb()
  await ensureSources({ db, queues: config.LAZARUS_SOURCES })
  // Before the drainer: it registers lazarus.hold as a source (kind 'hold') and declares the pause topology.
  const pauses = await startPauseRuntime({ db, config })
  // A first start would otherwise find lazarus.hold missing and log a warning before the queue is declared; a broker
  // that is down does not hold the rest up for long (the drainer retries on its own).
  await Promise.race([pauses.topologyReady, new Promise((resolve) => setTimeout(resolve, 3_000).unref())])
  const drainer = startDrainer({ db, config })
  const searchIndexer = startSearchIndexer({ db, log: logger('search') })
  // Its own broker connection; any number of processes share the jobs through leases in PostgreSQL.
  const replay = startReplayExecutor({ db })
  const retention = startRetentionLoop({ db, log: logger('retention'), days: config.LAZARUS_RETENTION_DAYS })
  const alerts = startAlertLoop({ db, log: logger('alerts'), everyMs: config.LAZARUS_ALERT_INTERVAL_S * 1000, publicUrl: config.LAZARUS_PUBLIC_URL })
  const groupFrames = startGroupFramesBackfill({ db, log: logger('group-frames') })
  // LAZARUS_TOPOLOGY_INTERVAL_S=0: the doctor runs only when asked (POST /api/topology/runs).
  const doctor = config.LAZARUS_TOPOLOGY_INTERVAL_S > 0 ? startTopologyDoctor({ db, log: logger('topology'), everyMs: config.LAZARUS_TOPOLOGY_INTERVAL_S * 1000 }) : null
  log.info('background workers started', { sources: config.LAZARUS_SOURCES.join(',') || '(from database)' })
  return {
    drainer,
    searchIndexer,
    replay,
    async stop() {
      // First: a replay stops publishing and records its confirms while the rest still runs.
      await replay.stop()
      await pauses.stop()
      await drainer.stop()
      await searchIndexer.stop()
      await retention.stop()
      await alerts.stop()
      await groupFrames.stop()
      await doctor?.stop()
    },
  }
}

/** Starts the drainer, the replay executor and the other background workers once per process; a second call returns the same handle. */
export function startBackground(): Promise<Background> {
  globalForRuntime.lazarusBackground ??= start().catch((error) => {
    globalForRuntime.lazarusBackground = undefined
    throw error
  })
  return globalForRuntime.lazarusBackground
}

/** The running background workers of this process, if any (the web process may run without them). */
export async function currentBackground(): Promise<Background | null> {
  // A start that failed was logged where it was started (boot-web, the worker's main); here it means none runs.
  return (await globalForRuntime.lazarusBackground?.catch(() => null)) ?? null
}

/** Stops gracefully on SIGINT/SIGTERM: consumers stop, held batches are written and acked, then exit. */
export function installShutdown(extra?: () => Promise<void>): void {
  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info('shutting down', { signal })
    const background = await currentBackground()
    await Promise.race([
      (async () => {
        await background?.stop()
        await extra?.()
        await (await getDb()).close()
      })(),
      new Promise((resolve) => setTimeout(resolve, 15_000)),
    ]).catch((error) => log.error('shutdown error', { error: (error as Error).message }))
    process.exit(0)
  }
  process.once('SIGINT', () => void shutdown('SIGINT'))
  process.once('SIGTERM', () => void shutdown('SIGTERM'))
}
