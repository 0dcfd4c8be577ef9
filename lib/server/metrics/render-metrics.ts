import 'server-only'
import { REPLAY_JOB_STATUSES } from '@/lib/shared/schemas/replay'
import { Counter, Gauge, Registry } from 'prom-client'
import type { Db } from '@/lib/server/platform/db'
import { listSources } from '@/lib/server/sources/list-sources'
import { countOpenFindings } from '@/lib/server/topology/findings-store'
import { FINDING_KINDS, FINDING_SEVERITIES } from '@/lib/shared/schemas/topology'

/** Error groups with the most messages get their own series; the rest are summed, to bound label cardinality. */
const MAX_GROUP_SERIES = 200

export type RenderedMetrics = { contentType: string; body: string }

/**
 * GET /api/metrics. Every business figure is read from PostgreSQL at scrape time, where the drainer and the
 * executor maintain it in the same transactions as the data, so the series are the same whichever process is
 * scraped and survive restarts (a `_total` never goes backwards). DLQ depth comes from the management API.
 */
export type RenderMetricsOptions = {
  db: Db
  /**
   * Process metrics (memory, event-loop lag, GC), which keep state between scrapes: the composition root's one
   * registry per process, merged into each scrape's.
   */
  processMetrics: Registry
}

export async function renderMetrics({ db, processMetrics }: RenderMetricsOptions): Promise<RenderedMetrics> {
  const { sql } = db
  const registry = new Registry()
  const [sourcesResult, groups, others, replays, jobs, pauses, backlog, findings] = await Promise.all([
    listSources({ db }),
    sql.query<{ id: string; error_type: string | null; dead: number }>(
      `SELECT id::text, error_type, greatest(count - replayed_count - resolved_count, 0)::float8 AS dead
       FROM error_groups WHERE signature <> 'lazarus:held' ORDER BY count DESC, id LIMIT $1`,
      [MAX_GROUP_SERIES],
    ),
    sql.query<{ dead: number; groups: number }>(
      `SELECT coalesce(sum(greatest(count - replayed_count - resolved_count, 0)), 0)::float8 AS dead, count(*)::int AS groups
       FROM error_groups WHERE signature <> 'lazarus:held'`,
    ),
    sql.query<{ confirmed: number; unroutable: number; failed: number; skipped: number; released: number }>(
      `SELECT coalesce(sum(confirmed), 0)::float8 AS confirmed, coalesce(sum(unroutable), 0)::float8 AS unroutable,
         coalesce(sum(failed), 0)::float8 AS failed, coalesce(sum(skipped), 0)::float8 AS skipped, coalesce(sum(released), 0)::float8 AS released
       FROM replay_jobs`,
    ),
    sql.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM replay_jobs GROUP BY status'),
    sql.query<{ active: number; held: number }>(
      `SELECT (SELECT count(*) FROM pauses WHERE status <> 'resumed')::int AS active,
              (SELECT count(*) FROM dead_letter_states WHERE status = 'held')::int AS held`,
    ),
    sql.query<{ ids: number }>('SELECT coalesce(sum(last_id - first_id + 1), 0)::float8 AS ids FROM search_backlog'),
    countOpenFindings({ sql }),
  ])
  const { sources, brokerError } = sourcesResult

  const ingested = new Counter({ name: 'lazarus_ingested_messages_total', help: 'Dead letters stored from each source since it was added.', labelNames: ['source', 'vhost'], registers: [registry] })
  const depth = new Gauge({ name: 'lazarus_dlq_depth_messages', help: 'Messages waiting in each source queue (management API).', labelNames: ['source', 'vhost'], registers: [registry] })
  const lag = new Gauge({
    name: 'lazarus_drain_lag_seconds',
    help: 'Seconds since the drainer last stored from a source that has messages waiting; 0 when the queue is empty.',
    labelNames: ['source', 'vhost'],
    registers: [registry],
  })
  const sourceUp = new Gauge({ name: 'lazarus_source_error', help: '1 when the drainer reports an error for the source.', labelNames: ['source', 'vhost'], registers: [registry] })
  const now = Date.now()
  for (const s of sources) {
    const labels = { source: s.queue, vhost: s.vhost }
    ingested.inc(labels, s.drained)
    sourceUp.set(labels, s.error ? 1 : 0)
    if (s.depth !== null) {
      depth.set(labels, s.depth)
      const since = s.lastDrainAt ? (now - Date.parse(s.lastDrainAt)) / 1000 : (now - Date.parse(s.createdAt)) / 1000
      lag.set(labels, s.depth > 0 ? Math.max(0, since) : 0)
    }
  }
  new Gauge({ name: 'lazarus_management_api_up', help: '1 when the RabbitMQ management API answered this scrape.', registers: [registry] }).set(brokerError ? 0 : 1)

  const dead = new Gauge({ name: 'lazarus_group_dead_messages', help: `Messages of each error group not yet replayed or resolved (the ${MAX_GROUP_SERIES} largest groups; the rest under group_id="other").`, labelNames: ['group_id', 'error_type'], registers: [registry] })
  let listed = 0
  for (const g of groups.rows) {
    dead.set({ group_id: g.id, error_type: g.error_type ?? '' }, g.dead)
    listed += g.dead
  }
  const rest = (others.rows[0]?.dead ?? 0) - listed
  if (rest > 0) dead.set({ group_id: 'other', error_type: '' }, rest)
  new Gauge({ name: 'lazarus_error_groups', help: 'Error groups known.', registers: [registry] }).set(others.rows[0]?.groups ?? 0)

  const outcomes = new Counter({ name: 'lazarus_replayed_messages_total', help: 'Replay outcomes per message: confirmed by the broker, returned unroutable, failed (nack, timeout, too large), skipped; released = held messages sent back.', labelNames: ['outcome'], registers: [registry] })
  const r = replays.rows[0]
  for (const outcome of ['confirmed', 'unroutable', 'failed', 'skipped', 'released'] as const) outcomes.inc({ outcome }, r?.[outcome] ?? 0)
  const jobGauge = new Gauge({ name: 'lazarus_replay_jobs', help: 'Replay jobs by status.', labelNames: ['status'], registers: [registry] })
  for (const status of REPLAY_JOB_STATUSES) jobGauge.set({ status }, jobs.rows.find((j) => j.status === status)?.n ?? 0)

  new Gauge({ name: 'lazarus_active_pauses', help: 'Entity or queue pauses in force.', registers: [registry] }).set(pauses.rows[0]?.active ?? 0)
  new Gauge({ name: 'lazarus_held_messages', help: 'Messages held by pause guards and not yet released.', registers: [registry] }).set(pauses.rows[0]?.held ?? 0)
  new Gauge({ name: 'lazarus_search_backlog_rows', help: 'Stored messages not yet in the search index (still searchable, more slowly).', registers: [registry] }).set(backlog.rows[0]?.ids ?? 0)

  // Every severity and kind is written, 0 included, so an alert on `> 0` sees a finding appear and resolve.
  const topology = new Gauge({
    name: 'lazarus_topology_findings',
    help: 'Open topology doctor findings nobody has acknowledged, by severity and kind (docs/topology.md).',
    labelNames: ['severity', 'kind'],
    registers: [registry],
  })
  for (const severity of FINDING_SEVERITIES) for (const kind of FINDING_KINDS) topology.set({ severity, kind }, findings.find((f) => f.severity === severity && f.kind === kind)?.n ?? 0)

  const merged = Registry.merge([registry, processMetrics])
  return { contentType: merged.contentType, body: await merged.metrics() }
}
