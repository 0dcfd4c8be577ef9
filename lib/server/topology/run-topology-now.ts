import 'server-only'
import { getConfig } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { runningEngines, type Composition } from '@/lib/server/platform/process/composition'
import type { TopologyDto } from '@/lib/shared/schemas/topology'
import { getTopology } from './get-topology'
import { runJetStreamCheck } from './jetstream/run-jetstream-check'
import { runTopologyCheck } from './run-topology-check'
import { watchedVhosts } from './watched-vhosts'

export type RunTopologyNowOptions = {
  db: Db
  vhost?: string
  /** The process's engines, whose ack sampler (if any) the JetStream run judges ack_wait with. */
  engines?: Composition['engines']
}

/**
 * POST /api/topology/runs: the engine's run, on demand, then the page's view of its result. It runs on the background
 * pool, as the engine's does: it is the same work, and the request pool's statement timeout is sized for reads. A run
 * that cannot reach the management API is not an HTTP error: the answer carries it in `error`, next to the last good
 * graph, exactly as the page shows a failed scheduled run. Only watched vhosts are run: each run leaves a row, and an
 * operator must not make Lazarus read (and keep) vhosts nobody configured. With LAZARUS_NATS_URL set the NATS server
 * is read beside the vhost (docs/jetstream.md#the-doctors-jetstream-findings), its failure likewise in `jetstream.error`.
 */
export async function runTopologyNow({ db, vhost, engines = null }: RunTopologyNowOptions): Promise<TopologyDto> {
  const watched = await watchedVhosts({ sql: db.sql })
  if (vhost !== undefined && !watched.includes(vhost)) {
    throw new AppError('unprocessable', `Vhost ${JSON.stringify(vhost.slice(0, 100))} is not watched: the doctor reads ${watched.join(', ')} (LAZARUS_TOPOLOGY_VHOSTS and the vhosts of sources).`)
  }
  const name = vhost ?? watched[0] ?? '/'
  const config = getConfig()
  const running = await runningEngines({ engines })
  await Promise.all([
    runTopologyCheck({ sql: db.background, vhost: name }),
    config.LAZARUS_NATS_URL ? runJetStreamCheck({ sql: db.background, settings: { ...config, LAZARUS_NATS_URL: config.LAZARUS_NATS_URL }, ackTimes: running?.ackTimes }) : null,
  ])
  return getTopology({ db, vhost: name })
}
