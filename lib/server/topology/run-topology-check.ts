import 'server-only'
import { getConfig } from '@/lib/server/platform/config'
import type { Sql } from '@/lib/server/platform/db/sql'
import { logger } from '@/lib/server/platform/log'
import { readBrokerSnapshot } from './broker-snapshot'
import { diagnose, type Diagnosis } from './diagnose'
import { saveFailedRun, saveSuccessfulRun } from './findings-store'
import { sampleQueueTtls, type QueueTtlSample } from './sample-queue-ttls'
import { readTopologyEvidence } from './topology-evidence'

const log = logger('topology')

export type RunTopologyCheckOptions = {
  /** The background pool for the engine, the request pool for "Run now". */
  sql: Sql
  vhost: string
  now?: Date
  /** How long each management API call may take. */
  timeoutMs?: number
}

export type TopologyCheckOutcome = { ok: true; findings: number; opened: number; resolved: number } | { ok: false; error: string }

/**
 * One run of the doctor on one vhost (docs/topology.md#runs): read the broker's definitions and stats (read-only),
 * read the evidence Lazarus stores, diagnose, and record the graph and findings. A run that cannot read the broker
 * records the failure and keeps the last good graph and findings, so a management API outage neither clears the
 * findings (a clean bill nobody earned) nor resolves them.
 */
export async function runTopologyCheck({ sql, vhost, now = new Date(), timeoutMs = 10_000 }: RunTopologyCheckOptions): Promise<TopologyCheckOutcome> {
  let snapshot
  try {
    snapshot = await readBrokerSnapshot({ vhost, timeoutMs })
  } catch (error) {
    const message = `Could not read the broker's topology through the management API: ${(error as Error).message}`
    await saveFailedRun({ sql, vhost, error: message, now })
    return { ok: false, error: message }
  }
  const [evidence, sources] = await Promise.all([
    readTopologyEvidence({ sql, vhost, samples: await sampleOptedIn(snapshot, timeoutMs) }),
    sql.query<{ id: string; queue: string }>('SELECT id::text, queue FROM sources WHERE vhost = $1', [vhost]).then((r) => r.rows),
  ])
  const diagnosis = withoutLazarusOwn(diagnose({ snapshot, evidence, sources }))
  const saved = await saveSuccessfulRun({
    sql,
    vhost,
    brokerVersion: diagnosis.brokerVersion,
    graph: { nodes: diagnosis.nodes, edges: diagnosis.edges },
    checks: diagnosis.checks,
    findings: diagnosis.findings,
    now,
  })
  return { ok: true, findings: diagnosis.findings.length, ...saved }
}

/**
 * Peeks at the classic queues an admin opted in (LAZARUS_TOPOLOGY_SAMPLE_QUEUES) that this vhost has. A peek that fails
 * is logged and left out: it is evidence for one rule, not a reason to fail the run.
 */
async function sampleOptedIn(snapshot: Awaited<ReturnType<typeof readBrokerSnapshot>>, timeoutMs: number): Promise<QueueTtlSample[]> {
  const wanted = new Set(getConfig().LAZARUS_TOPOLOGY_SAMPLE_QUEUES)
  const samples: QueueTtlSample[] = []
  for (const queue of snapshot.queues) {
    if (!wanted.has(queue.name) || queue.type !== 'classic') continue
    try {
      samples.push(await sampleQueueTtls({ vhost: snapshot.vhost, queue: queue.name, count: 20, timeoutMs }))
    } catch (error) {
      log.warn('could not sample a queue', { vhost: snapshot.vhost, queue: queue.name, error: (error as Error).message })
    }
  }
  return samples
}

/**
 * Lazarus' own objects (the hold queue and exchange, the control exchange) stay in the graph but raise nothing: Lazarus
 * declares them as the pause protocol needs (docs/ARCHITECTURE.md#pause-hold-release) and drains the hold queue as it
 * fills, so a finding there ("no length limit") would be advice nobody can take.
 */
function withoutLazarusOwn(diagnosis: Diagnosis): Diagnosis {
  const config = getConfig()
  const own = new Set([`queue:${config.LAZARUS_HOLD_QUEUE}`, `exchange:${config.LAZARUS_HOLD_QUEUE}`, `exchange:${config.LAZARUS_CONTROL_EXCHANGE}`])
  const findings = diagnosis.findings.filter((f) => !f.objects.every((o) => own.has(`${o.type}:${o.name}`)))
  if (findings.length === diagnosis.findings.length) return diagnosis
  const dropped = new Map<string, number>()
  for (const f of diagnosis.findings) if (!findings.includes(f)) dropped.set(f.kind, (dropped.get(f.kind) ?? 0) + 1)
  const nodes = diagnosis.nodes.map((n) => (own.has(`${n.type}:${n.name}`) ? { ...n, severity: null } : n))
  const checks = diagnosis.checks.map((c) => (dropped.has(c.kind) ? { ...c, raised: c.raised - dropped.get(c.kind)! } : c))
  return { ...diagnosis, nodes, checks, findings }
}
