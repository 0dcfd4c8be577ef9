import 'server-only'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { natsConnectionOptions, type NatsSettings } from '@/lib/server/platform/broker/nats'
import type { Config } from '@/lib/server/platform/config'
import type { Sql } from '@/lib/server/platform/db/sql'
import { saveFailedRun, saveSuccessfulRun, selectFindings } from '../findings-store'
import type { TopologyCheckOutcome } from '../run-topology-check'
import type { DiagnosedFinding } from '../rules/rule-kit'
import type { ObservedAckTimes } from './ack-times'
import { diagnoseJetStream } from './diagnose-jetstream'
import { readJetStreamEvidence, readJetStreamSources } from './jetstream-evidence'
import { readJetStreamSnapshot, type JetStreamSnapshot } from './jetstream-snapshot'
import { findingKey, JETSTREAM_SCOPE, type JetStreamThresholds } from './rules/jetstream-kit'

export type JetStreamDoctorSettings = NatsSettings & Pick<Config, 'LAZARUS_NATS_ADVISORY_STREAM' | 'LAZARUS_NATS_CONSUMER'>

export type RunJetStreamCheckOptions = {
  sql: Sql
  /** The NATS connection settings; LAZARUS_NATS_URL must be set (the callers check). */
  settings: JetStreamDoctorSettings
  /** The ack times the engine's sampler holds; absent when this process runs no engines (ack_wait is then not judged). */
  ackTimes?: (() => ObservedAckTimes[]) | null
  now?: Date
  /** How long connecting, and each JetStream API request, may take. */
  timeoutMs?: number
  thresholds?: Partial<JetStreamThresholds>
}

/**
 * One run of the doctor on the NATS server (docs/jetstream.md#the-doctors-jetstream-findings): read the account's
 * streams and consumers ($JS.API.STREAM.LIST, CONSUMER.LIST; read-only), read what Lazarus stored, diagnose, and record
 * the graph and findings under the JetStream scope of the doctor's store, as a vhost's run is recorded. A run that cannot
 * reach the server records the failure and keeps the last good graph and findings, as for RabbitMQ.
 */
export async function runJetStreamCheck({ sql, settings, ackTimes = null, now = new Date(), timeoutMs = 10_000, thresholds }: RunJetStreamCheckOptions): Promise<TopologyCheckOutcome> {
  let nc: NatsConnection | null = null
  let read: JetStreamSnapshot
  try {
    // One attempt, bounded: the run is retried by the next round, and Run now must answer.
    nc = await connect({ ...natsConnectionOptions(settings, 'lazarus-doctor'), maxReconnectAttempts: 0, timeout: timeoutMs })
    const jsm = await jetstreamManager(nc, { timeout: timeoutMs })
    read = await readJetStreamSnapshot({ jsm, serverVersion: nc.info?.version ?? 'unknown', now })
  } catch (error) {
    // The client's messages name no server address, so none of the URL's credentials either.
    const message = `Could not read JetStream from the NATS server (LAZARUS_NATS_URL): ${(error as Error).message}`
    await saveFailedRun({ sql, vhost: JETSTREAM_SCOPE, error: message, now })
    return { ok: false, error: message }
  } finally {
    await nc?.close().catch(() => undefined)
  }
  const sources = await readJetStreamSources({ sql })
  const [evidence, previous] = await Promise.all([readJetStreamEvidence({ sql, sources }), ackTimes ? [] : previousFindings(sql)])
  const diagnosis = diagnoseJetStream({
    snapshot: read,
    evidence,
    sources,
    ackTimes: ackTimes ? ackTimes() : null,
    own: { advisoryStream: settings.LAZARUS_NATS_ADVISORY_STREAM, consumer: settings.LAZARUS_NATS_CONSUMER },
    thresholds,
    previous,
  })
  const saved = await saveSuccessfulRun({
    sql,
    vhost: JETSTREAM_SCOPE,
    brokerVersion: diagnosis.serverVersion,
    graph: { nodes: diagnosis.nodes, edges: diagnosis.edges },
    checks: diagnosis.checks,
    findings: diagnosis.findings,
    now,
  })
  return { ok: true, findings: diagnosis.findings.length, ...saved }
}

/** The open findings as the last run left them, for the kinds this run cannot judge (diagnoseJetStream's `previous`). */
async function previousFindings(sql: Sql): Promise<DiagnosedFinding[]> {
  const rows = await selectFindings({ sql, vhost: JETSTREAM_SCOPE })
  return rows.map((r) => ({ kind: r.kind, severity: r.severity, vhost: r.vhost, ...r.detail, key: findingKey(r.kind, r.detail.objects) }))
}
