import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { FindingDto, TopologyDto } from '@/lib/shared/schemas/topology'
import { focusOnQueue } from './focus-on-queue'
import { toFindingDto } from './finding-dto'
import { selectFindings, selectRun } from './findings-store'
import { watchedVhosts } from './watched-vhosts'

export type GetTopologyOptions = {
  db: Db
  /** Default: the source's vhost, else the first watched one. */
  vhost?: string
  /** A source's id: only the part of the graph around its queue, and the findings that name an object in it. */
  sourceId?: string
}

/** How many hops from a source's queue the per-source view shows: its DLX chain and what dead-letters into it. */
const SOURCE_VIEW_DEPTH = 4

/** GET /api/topology: the last run's graph and the vhost's open findings (docs/topology.md#pages-and-api). */
export async function getTopology({ db, vhost, sourceId }: GetTopologyOptions): Promise<TopologyDto> {
  const { sql } = db
  const vhosts = await watchedVhosts({ sql })
  let focus: string | null = null
  if (sourceId !== undefined) {
    const { rows } = await sql.query<{ vhost: string; queue: string }>('SELECT vhost, queue FROM sources WHERE id = $1::bigint', [parseId(sourceId, 'source').toString()])
    if (!rows[0]) throw notFound(`source ${sourceId}`)
    vhost ??= rows[0].vhost
    focus = rows[0].queue
  }
  const name = vhost ?? vhosts[0] ?? '/'
  const [run, rows] = await Promise.all([selectRun({ sql, vhost: name }), selectFindings({ sql, vhost: name })])
  const findings: FindingDto[] = rows.map(toFindingDto)
  const base: TopologyDto = {
    vhost: name,
    vhosts: vhosts.includes(name) ? vhosts : [...vhosts, name],
    brokerVersion: run?.broker_version ?? null,
    checkedAt: run?.checked_at ? new Date(run.checked_at).toISOString() : null,
    error: run?.error ?? null,
    nodes: run?.graph.nodes ?? [],
    edges: run?.graph.edges ?? [],
    findings,
    checks: run?.checks ?? [],
  }
  if (focus === null) return base
  return focusOnQueue(base, focus, SOURCE_VIEW_DEPTH)
}
