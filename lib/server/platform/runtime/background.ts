import 'server-only'
import { startAlertLoop } from '@/lib/server/engines/alert-evaluator/alert-loop'
import { startGroupFramesBackfill } from '@/lib/server/engines/group-frames/group-frames-backfill'
import { getConfig } from '@/lib/server/platform/config'
import { startDrainer, type Drainer } from '@/lib/server/engines/drainer/drainer'
import { logger } from '@/lib/server/platform/log'
import { runBeforeShutdown } from './before-shutdown'
import { closeComposition, composition, runningEngines, type Composition, type RunningEngines } from '@/lib/server/platform/process/composition'
import { startPauseRuntime } from '@/lib/server/engines/release/pause-runtime'
import { startReplayExecutor, type ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { startRetentionLoop } from '@/lib/server/engines/retention/retention-loop'
import { startSearchIndexer, type SearchIndexer } from '@/lib/server/engines/search-indexer/search-indexer'
import { startTopologyDoctor } from '@/lib/server/engines/topology-doctor/topology-doctor-loop'
import { startAckSampler } from '@/lib/server/engines/topology-doctor/ack-sampler'
import { startJetStreamCapture } from '@/lib/server/engines/jetstream-capture/jetstream-capture'
import { ensureSources } from '@/lib/server/sources/create-source'

const log = logger('runtime')

type Background = RunningEngines & { drainer: Drainer; searchIndexer: SearchIndexer; replay: ReplayExecutor }

async function start(root: Composition): Promise<Background> {
  const config = getConfig()
  const db = await root.db()
  await ensureSources({ db, queues: config.LAZARUS_SOURCES })
  // Before the drainer: it registers lazarus.hold as a source (kind 'hold') and declares the pause topology on the
  // root's control connection.
  const pauses = await startPauseRuntime({ db, control: root.brokers.control, config })
  // A first start would otherwise find lazarus.hold missing and log a warning before the queue is declared; a broker
  // that is down does not hold the rest up for long (the drainer retries on its own).
  await Promise.race([pauses.topologyReady, new Promise((resolve) => setTimeout(resolve, 3_000).unref())])
  const drainer = startDrainer({ db, config, reconcileMs: config.LAZARUS_DRAIN_RECONCILE_MS, sourcesChanged: root.sourcesChanged })
  const searchIndexer = startSearchIndexer({ db, log: logger('search') })
  // Its own broker connection; any number of processes share the jobs through leases in PostgreSQL.
  const replay = startReplayExecutor({ db, control: root.control, work: root.replayWork })
  const retention = startRetentionLoop({ db, log: logger('retention'), days: config.LAZARUS_RETENTION_DAYS })
  const alerts = startAlertLoop({ db, log: logger('alerts'), everyMs: config.LAZARUS_ALERT_INTERVAL_S * 1000, publicUrl: config.LAZARUS_PUBLIC_URL })
  const groupFrames = startGroupFramesBackfill({ db, log: logger('group-frames') })
  // The ack times JetStream samples, heard while the engines run, for the doctor's ack_wait finding (Run now's too).
  const natsSettings = config.LAZARUS_NATS_URL ? { ...config, LAZARUS_NATS_URL: config.LAZARUS_NATS_URL } : null
  const ackSampler = natsSettings ? startAckSampler({ settings: natsSettings, log: logger('topology') }) : null
  // LAZARUS_TOPOLOGY_INTERVAL_S=0: the doctor runs only when asked (POST /api/topology/runs).
  const doctor =
    config.LAZARUS_TOPOLOGY_INTERVAL_S > 0
      ? startTopologyDoctor({ db, log: logger('topology'), everyMs: config.LAZARUS_TOPOLOGY_INTERVAL_S * 1000, jetstream: natsSettings && ackSampler && { settings: natsSettings, ackTimes: ackSampler.read } })
      : null
  // Without LAZARUS_NATS_URL there is no NATS to capture from; JetStream sources then report it (docs/jetstream.md).
  const nats = config.LAZARUS_NATS_URL
    ? startJetStreamCapture({ db, log: logger('jetstream'), settings: { ...config, LAZARUS_NATS_URL: config.LAZARUS_NATS_URL }, maxBodyBytes: config.LAZARUS_MAX_BODY_BYTES, reconcileMs: config.LAZARUS_DRAIN_RECONCILE_MS, sourcesChanged: root.sourcesChanged })
    : null
  log.info('background workers started', { sources: config.LAZARUS_SOURCES.join(',') || '(from database)' })
  return {
    drainer,
    searchIndexer,
    replay,
    ackTimes: ackSampler?.read,
    async stop() {
      // First: a replay stops publishing and records its confirms while the rest still runs.
      await replay.stop()
      await pauses.stop()
      await drainer.stop()
      await nats?.stop()
      await searchIndexer.stop()
      await retention.stop()
      await alerts.stop()
      await groupFrames.stop()
      await doctor?.stop()
      await ackSampler?.stop()
    },
  }
}

/**
 * Starts the drainer, the replay executor and the other background workers once per process, with what the process's
 * composition root holds; a second call returns the same handle. The root keeps it, so routes see the engines.
 */
export function startBackground(root: Composition): Promise<RunningEngines> {
  const starting = (root.engines ??= start(root))
  starting.catch(() => {
    if (root.engines === starting) root.engines = null
  })
  return starting
}

/**
 * Stops gracefully on SIGINT/SIGTERM: the HTTP server answers what is in flight and takes nothing new, consumers stop,
 * held batches are written and acked, then exit.
 */
export function installShutdown(extra?: () => Promise<void>): void {
  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info('shutting down', { signal })
    const engines = await runningEngines(composition())
    await Promise.race([
      (async () => {
        // The web process answers its requests in flight while the engines stop beside it, so a slow request does not
        // eat the engines' time to write and ack what they hold; the database closes only after both.
        await Promise.all([runBeforeShutdown(), engines?.stop()])
        await extra?.()
        // The broker connections the root owns, then the database.
        await closeComposition()
      })(),
      new Promise((resolve) => setTimeout(resolve, 15_000)),
    ]).catch((error) => log.error('shutdown error', { error }))
    process.exit(0)
  }
  process.once('SIGINT', () => void shutdown('SIGINT'))
  process.once('SIGTERM', () => void shutdown('SIGTERM'))
}
