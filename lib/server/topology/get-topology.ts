import 'server-only'
import { getConfig } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { FindingDto, FindingSeverity, TopologyDto } from '@/lib/shared/schemas/topology'
import { focusOnNode, focusOnQueue } from './focus-on-queue'
import { toFindingDto } from './finding-dto'
import { selectFindings, selectRun } from './findings-store'
import { JETSTREAM_SCOPE } from './jetstream/rules/jetstream-kit'
import { watchedVhosts } from './watched-vhosts'

export type GetTopologyOptions = {
  db: Db
  /** Default: the source's vhost, else the first watched one. */
  vhost?: string
  /** A source's id: only the part of the graph around its queue (or stream), and the findings that name an object in it. */
  sourceId?: string
}

/** How many hops from a source's queue the per-source view shows: its DLX chain and what dead-letters into it. */
const SOURCE_VIEW_DEPTH = 4
/** From a JetStream source's stream: its consumers, and the streams keeping their advisories. */
const STREAM_VIEW_DEPTH = 2

const RANK: Record<FindingSeverity, number> = { error: 0, warning: 1, info: 2 }

/**
 * GET /api/topology: the last run's graph and the vhost's open findings (docs/topology.md#pages-and-api), and beside
 * them the JetStream part when LAZARUS_NATS_URL is set (docs/jetstream.md#the-doctors-jetstream-findings).
 */
export async function getTopology({ db, vhost, sourceId }: GetTopologyOptions): Promise<TopologyDto> {
  const { sql } = db
  const vhosts = await watchedVhosts({ sql })
  const nats = getConfig().LAZARUS_NATS_URL !== undefined
  let focus: { queue: string } | { stream: string } | null = null
  if (sourceId !== undefined) {
    const { rows } = await sql.query<{ vhost: string; queue: string; stream: string | null }>('SELECT vhost, queue, stream FROM sources WHERE id = $1::bigint', [parseId(sourceId, 'source').toString()])
    if (!rows[0]) throw notFound(`source ${sourceId}`)
    if (rows[0].stream !== null) focus = { stream: rows[0].stream }
    else {
      vhost ??= rows[0].vhost
      focus = { queue: rows[0].queue }
    }
  }
  // The empty vhost is the JetStream part's (jetstream-kit.ts), never a RabbitMQ vhost.
  const name = vhost || vhosts[0] || '/'
  const [run, rows, js, jsRows] = await Promise.all([
    selectRun({ sql, vhost: name }),
    selectFindings({ sql, vhost: name }),
    nats ? selectRun({ sql, vhost: JETSTREAM_SCOPE }) : null,
    nats ? selectFindings({ sql, vhost: JETSTREAM_SCOPE }) : [],
  ])
  const findings: FindingDto[] = [...rows, ...jsRows].map(toFindingDto).sort((a, b) => RANK[a.severity] - RANK[b.severity])
  const base: TopologyDto = {
    vhost: name,
    vhosts: vhosts.includes(name) ? vhosts : [...vhosts, name],
    brokerVersion: run?.broker_version ?? null,
    checkedAt: run?.checked_at ? new Date(run.checked_at).toISOString() : null,
    error: run?.error ?? null,
    nodes: [...(run?.graph.nodes ?? []), ...(js?.graph.nodes ?? [])],
    edges: [...(run?.graph.edges ?? []), ...(js?.graph.edges ?? [])],
    findings,
    checks: [...(run?.checks ?? []), ...(js?.checks ?? [])],
    jetstream: {
      configured: nats,
      checkedAt: js?.checked_at ? new Date(js.checked_at).toISOString() : null,
      serverVersion: js?.broker_version ?? null,
      error: js?.error ?? null,
    },
  }
  if (focus === null) return base
  return 'queue' in focus ? focusOnQueue(base, focus.queue, SOURCE_VIEW_DEPTH) : focusOnNode(base, `s:${focus.stream}`, STREAM_VIEW_DEPTH)
}
