import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Logger } from '@/lib/server/platform/log'
import { startTimedLoop, type TimedLoop } from '@/lib/server/platform/timed-loop'
import { runTopologyCheck } from '@/lib/server/topology/run-topology-check'
import { watchedVhosts } from '@/lib/server/topology/watched-vhosts'
import { recentlyChecked } from './topology-doctor-store'

export type StartTopologyDoctorOptions = { db: Db; log: Logger; everyMs: number }

/**
 * Runs the topology doctor on every watched vhost every `everyMs` (LAZARUS_TOPOLOGY_INTERVAL_S; docs/topology.md#runs).
 * A run only reads the broker and writes the doctor's own two tables, in one transaction per vhost, so a crash at any
 * point leaves the previous run's findings (or this one's, whole). With several processes, a vhost another process
 * checked within the last half interval is skipped; two processes that start together both run, which is harmless:
 * each run's writes are serialised by the store's lock and describe the same broker.
 */
export function startTopologyDoctor({ db, log, everyMs }: StartTopologyDoctorOptions): TimedLoop {
  return startTimedLoop({
    firstAfterMs: 3_000,
    everyMs,
    onError: (error) => log.warn('topology doctor run failed; will retry', { error: error.message }),
    round: async (stopping) => {
      for (const vhost of await watchedVhosts({ sql: db.background })) {
        if (stopping()) break
        if (await recentlyChecked({ sql: db.background, vhost, withinMs: everyMs / 2 })) continue
        const outcome = await runTopologyCheck({ sql: db.background, vhost })
        if (!outcome.ok) log.warn('topology doctor could not read the broker', { vhost, error: outcome.error })
        else if (outcome.opened > 0 || outcome.resolved > 0) log.info('topology findings changed', { vhost, open: outcome.findings, opened: outcome.opened, resolved: outcome.resolved })
      }
    },
  })
}
