import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { FindingDto, FindingKind, FindingSeverity, TopologyCheckDto, TopologyEdgeDto, TopologyNodeDto } from '@/lib/shared/schemas/topology'

/** What a run found for one trap, before the store gives it an id and its times (docs/topology.md#findings). */
export type FindingDetail = Pick<FindingDto, 'title' | 'why' | 'fix' | 'evidence' | 'objects' | 'cycle' | 'messagesQuery'>
export type NewFinding = FindingDetail & { key: string; kind: FindingKind; severity: FindingSeverity }

export type StoredGraph = { nodes: TopologyNodeDto[]; edges: TopologyEdgeDto[] }

export type TopologyRunRow = {
  vhost: string
  checked_at: Date | null
  broker_version: string | null
  graph: StoredGraph
  checks: TopologyCheckDto[]
  error: string | null
  failed_at: Date | null
}

export type FindingRow = {
  id: string
  vhost: string
  kind: FindingKind
  severity: FindingSeverity
  detail: FindingDetail
  first_seen_at: Date
  last_seen_at: Date
  resolved_at: Date | null
  acknowledged_at: Date | null
  acknowledged_by: string | null
  acknowledge_reason: string | null
}

const FINDING_COLUMNS = `id::text, vhost, kind, severity, detail, first_seen_at, last_seen_at, resolved_at, acknowledged_at, acknowledged_by, acknowledge_reason`

/**
 * Records a successful run: the graph and checks replace the vhost's last ones, each finding is opened, seen again or
 * reopened, and every open finding the run did not raise is resolved. Runs of one vhost are serialised by an advisory
 * lock, so two processes that read the broker at the same time cannot interleave their writes.
 */
export async function saveSuccessfulRun({
  sql,
  vhost,
  brokerVersion,
  graph,
  checks,
  findings,
  now,
}: {
  sql: Sql
  vhost: string
  brokerVersion: string | null
  graph: StoredGraph
  checks: TopologyCheckDto[]
  findings: NewFinding[]
  now: Date
}): Promise<{ opened: number; resolved: number }> {
  return sql.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('lazarus:topology:' || $1))`, [vhost])
    await tx.query(
      `INSERT INTO topology_runs (vhost, checked_at, broker_version, graph, checks, error, failed_at)
       VALUES ($1, $2, $3, $4::json, $5::json, NULL, NULL)
       ON CONFLICT (vhost) DO UPDATE SET checked_at = excluded.checked_at, broker_version = excluded.broker_version,
         graph = excluded.graph, checks = excluded.checks, error = NULL, failed_at = NULL`,
      [vhost, now, brokerVersion, JSON.stringify(graph), JSON.stringify(checks)],
    )
    // One statement for every finding: unnest keeps it to one round trip however many the vhost has.
    const { rows } = await tx.query<{ opened: boolean }>(
      `INSERT INTO topology_findings AS f (vhost, key, kind, severity, detail, first_seen_at, last_seen_at)
       SELECT $1, k, kd, s, d::json, $2, $2 FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS t(k, kd, s, d)
       ON CONFLICT (vhost, key) DO UPDATE SET
         kind = excluded.kind, severity = excluded.severity, detail = excluded.detail, last_seen_at = excluded.last_seen_at,
         resolved_at = NULL,
         first_seen_at = CASE WHEN f.resolved_at IS NULL THEN f.first_seen_at ELSE excluded.first_seen_at END,
         opened_seq = CASE WHEN f.resolved_at IS NULL THEN f.opened_seq ELSE nextval('topology_findings_opened_seq') END,
         acknowledged_at = CASE WHEN f.resolved_at IS NULL THEN f.acknowledged_at END,
         acknowledged_by = CASE WHEN f.resolved_at IS NULL THEN f.acknowledged_by END,
         acknowledge_reason = CASE WHEN f.resolved_at IS NULL THEN f.acknowledge_reason END
       RETURNING (f.first_seen_at = $2) AS opened`,
      [
        vhost,
        now,
        findings.map((f) => f.key),
        findings.map((f) => f.kind),
        findings.map((f) => f.severity),
        findings.map((f) => JSON.stringify(detailOf(f))),
      ],
    )
    const resolved = await tx.execute(
      `UPDATE topology_findings SET resolved_at = $2 WHERE vhost = $1 AND resolved_at IS NULL AND NOT (key = ANY($3::text[]))`,
      [vhost, now, findings.map((f) => f.key)],
    )
    // first_seen_at is this run's time exactly when the row was inserted or reopened just now.
    return { opened: rows.filter((r) => r.opened).length, resolved }
  })
}

/** Records a failed run: the last good graph and findings stay (the page says how old they are), with the failure. */
export async function saveFailedRun({ sql, vhost, error, now }: { sql: Sql; vhost: string; error: string; now: Date }): Promise<void> {
  await sql.query(
    `INSERT INTO topology_runs (vhost, error, failed_at) VALUES ($1, $2, $3)
     ON CONFLICT (vhost) DO UPDATE SET error = excluded.error, failed_at = excluded.failed_at`,
    [vhost, error.slice(0, 1000), now],
  )
}

export async function selectRun({ sql, vhost }: { sql: Sql; vhost: string }): Promise<TopologyRunRow | null> {
  const { rows } = await sql.query<TopologyRunRow>(
    `SELECT vhost, checked_at, broker_version, graph, checks, error, failed_at FROM topology_runs WHERE vhost = $1`,
    [vhost],
  )
  return rows[0] ?? null
}

/** Open findings (or all, with `includeResolved`) of one vhost or every vhost, worst first. */
export async function selectFindings({ sql, vhost, includeResolved = false }: { sql: Sql; vhost?: string; includeResolved?: boolean }): Promise<FindingRow[]> {
  const { rows } = await sql.query<FindingRow>(
    `SELECT ${FINDING_COLUMNS} FROM topology_findings
     WHERE ($1::text IS NULL OR vhost = $1) AND ($2 OR resolved_at IS NULL)
     ORDER BY resolved_at IS NOT NULL, CASE severity WHEN 'error' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END, first_seen_at DESC, id DESC
     LIMIT 2000`,
    [vhost ?? null, includeResolved],
  )
  return rows
}

export async function selectFinding({ sql, id, forUpdate = false }: { sql: Sql; id: string; forUpdate?: boolean }): Promise<FindingRow | null> {
  const { rows } = await sql.query<FindingRow>(`SELECT ${FINDING_COLUMNS} FROM topology_findings WHERE id = $1::bigint${forUpdate ? ' FOR UPDATE' : ''}`, [id])
  return rows[0] ?? null
}

export async function setAcknowledged({ sql, id, by, reason, now }: { sql: Sql; id: string; by: string; reason: string; now: Date }): Promise<FindingRow> {
  const { rows } = await sql.query<FindingRow>(
    `UPDATE topology_findings SET acknowledged_at = $2, acknowledged_by = $3, acknowledge_reason = $4 WHERE id = $1::bigint RETURNING ${FINDING_COLUMNS}`,
    [id, now, by, reason],
  )
  return rows[0]
}

/** Open, unacknowledged findings by severity and kind, for GET /api/metrics. */
export async function countOpenFindings({ sql }: { sql: Sql }): Promise<{ severity: FindingSeverity; kind: FindingKind; n: number }[]> {
  const { rows } = await sql.query<{ severity: FindingSeverity; kind: FindingKind; n: number }>(
    `SELECT severity, kind, count(*)::int AS n FROM topology_findings WHERE resolved_at IS NULL AND acknowledged_at IS NULL GROUP BY severity, kind`,
  )
  return rows
}

export type OpenedFinding = { id: string; vhost: string; kind: FindingKind; severity: FindingSeverity; title: string }

/**
 * The findings opened (or reopened) since the alert evaluator last looked (at most 500), moving its cursor past them;
 * locks the cursor until commit. Like new groups, they are noticed by a sequence the opening takes.
 */
export async function takeOpenedFindings({ sql }: { sql: Sql }): Promise<OpenedFinding[]> {
  const { rows: cursor } = await sql.query<{ last: string }>('SELECT last_finding_seq::text AS last FROM alert_cursor WHERE id = 1 FOR UPDATE')
  const last = cursor[0]?.last ?? '0'
  const { rows } = await sql.query<OpenedFinding & { seq: string }>(
    `SELECT id::text, vhost, kind, severity, detail->>'title' AS title, opened_seq::text AS seq FROM topology_findings
     WHERE opened_seq > $1::bigint AND resolved_at IS NULL ORDER BY opened_seq LIMIT 500`,
    [last],
  )
  if (rows.length === 0) return []
  await sql.query(
    `INSERT INTO alert_cursor (id, last_group_id, last_finding_seq) VALUES (1, 0, $1::bigint) ON CONFLICT (id) DO UPDATE SET last_finding_seq = excluded.last_finding_seq`,
    [rows[rows.length - 1].seq],
  )
  return rows.map(({ seq: _seq, ...finding }) => finding)
}

const detailOf = (f: NewFinding): FindingDetail => ({
  title: f.title,
  why: f.why,
  fix: f.fix,
  evidence: f.evidence,
  objects: f.objects,
  cycle: f.cycle,
  messagesQuery: f.messagesQuery,
})
