import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Logger } from '@/lib/server/platform/log'
import { startTimedLoop, type TimedLoop } from '@/lib/server/platform/timed-loop'
import type { ObservedAckTimes } from '@/lib/server/topology/jetstream/ack-times'
import { JETSTREAM_SCOPE } from '@/lib/server/topology/jetstream/rules/jetstream-kit'
import { runJetStreamCheck, type JetStreamDoctorSettings } from '@/lib/server/topology/jetstream/run-jetstream-check'
import { runTopologyCheck } from '@/lib/server/topology/run-topology-check'
import { watchedVhosts } from '@/lib/server/topology/watched-vhosts'
import { claimScheduledRun } from './topology-doctor-store'

export type StartTopologyDoctorOptions = {
  db: Db
  log: Logger
  everyMs: number
  /** With LAZARUS_NATS_URL: the NATS server is read too, each round, with what the ack sampler holds. */
  jetstream?: { settings: JetStreamDoctorSettings; ackTimes: () => ObservedAckTimes[] } | null
}

/**
 * Runs the topology doctor on every watched vhost every `everyMs` (LAZARUS_TOPOLOGY_INTERVAL_S; docs/topology.md#runs),
 * then on the NATS server when there is one (docs/jetstream.md#the-doctors-jetstream-findings).
 * A run only reads the broker and writes the doctor's own two tables, in one transaction per vhost, so a crash at any
 * point leaves the previous run's findings (or this one's, whole). With several processes, each claims a vhost before
 * reading it and one claim succeeds per nine tenths of an interval (claimScheduledRun), so the fleet reads each vhost
 * about once per interval, however many processes run the doctor; a process that dies after its claim leaves the
 * vhost to the next interval.
 */
export function startTopologyDoctor({ db, log, everyMs, jetstream }: StartTopologyDoctorOptions): TimedLoop {
  return startTimedLoop({
    firstAfterMs: 3_000,
    everyMs,
    onError: (error) => log.warn('topology doctor run failed; will retry', { error: error.message }),
    round: async (stopping) => {
      for (const vhost of await watchedVhosts({ sql: db.background })) {
        if (stopping()) break
        // Nine tenths: a process's own next round, a little early or late, still finds its last claim expired.
        if (!(await claimScheduledRun({ sql: db.background, vhost, withinMs: everyMs * 0.9 }))) continue
        const outcome = await runTopologyCheck({ sql: db.background, vhost })
        if (!outcome.ok) log.warn('topology doctor could not read the broker', { vhost, error: outcome.error })
        else if (outcome.opened > 0 || outcome.resolved > 0) log.info('topology findings changed', { vhost, open: outcome.findings, opened: outcome.opened, resolved: outcome.resolved })
      }
      // The NATS server is one more scope, claimed like a vhost (docs/jetstream.md#the-doctors-jetstream-findings).
      if (!jetstream || stopping() || !(await claimScheduledRun({ sql: db.background, vhost: JETSTREAM_SCOPE, withinMs: everyMs * 0.9 }))) return
      const outcome = await runJetStreamCheck({ sql: db.background, settings: jetstream.settings, ackTimes: jetstream.ackTimes })
      if (!outcome.ok) log.warn('topology doctor could not read JetStream', { error: outcome.error })
      else if (outcome.opened > 0 || outcome.resolved > 0) log.info('JetStream findings changed', { open: outcome.findings, opened: outcome.opened, resolved: outcome.resolved })
    },
  })
}
