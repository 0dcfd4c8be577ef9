import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import {
  DEFAULT_HALT_MIN_MESSAGES,
  DEFAULT_HALT_PERCENT,
  DEFAULT_RAMP_PERCENTS,
  stageBounds,
  suggestedWindowSeconds,
  type StagingInput,
} from '@/lib/shared/replay-stages'
import type { ReplayStagingPlanDto } from '@/lib/shared/schemas/replay'
import type { TopologyEdgeDto, TopologyNodeDto } from '@/lib/shared/schemas/topology'

type Graph = { nodes: TopologyNodeDto[]; edges: TopologyEdgeDto[] }

const SEPARATORS = /[.\-_:/]/

/** `orders` for `orders.dlq`: the name up to its last separator (the whole name when it has none). */
function stemOf(name: string): string {
  const cut = Math.max(...[...name].map((c, i) => (SEPARATORS.test(c) ? i : -1)))
  return cut > 0 ? name.slice(0, cut) : name
}

/**
 * The sum of the message TTLs (seconds) of a DLQ's retry tiers in the doctor's graph: the queues it inferred as delay
 * queues (docs/topology.md#queue-roles) of the same application, by the name stem the DLQ shares with them (`orders`
 * for `orders.dlq`, `orders.retry.5s`, `orders.retry.30s`), as the three-tier builder names them. A copy that fails
 * again goes through each tier once before it reaches the DLQ, so this is how long a failure can take to come back.
 * null when the graph has none.
 */
export function retryTtlSecondsFromGraph(graph: Graph, dlq: string): number | null {
  const stem = stemOf(dlq)
  let total = 0
  let found = false
  for (const node of graph.nodes) {
    if (node.type !== 'queue' || node.role !== 'delay' || node.name === dlq) continue
    if (!(node.name === stem || (node.name.startsWith(stem) && SEPARATORS.test(node.name.charAt(stem.length))))) continue
    const ttl = node.settings.find((s) => s.key === 'message-ttl')?.value
    if (typeof ttl !== 'number' || ttl <= 0) continue
    total += ttl / 1000
    found = true
  }
  return found ? total : null
}

/** The longest retry-tier sum over the sources' DLQs, from each vhost's last topology run. */
async function retryTtlSeconds({ sql, sourceIds }: { sql: Sql; sourceIds: string[] }): Promise<number | null> {
  if (sourceIds.length === 0) return null
  const { rows } = await sql.query<{ queue: string; graph: Graph | null }>(
    `SELECT s.queue, r.graph FROM sources s LEFT JOIN topology_runs r ON r.vhost = s.vhost WHERE s.id = ANY($1::bigint[])`,
    [sourceIds],
  )
  let best: number | null = null
  for (const row of rows) {
    if (!row.graph) continue
    const seconds = retryTtlSecondsFromGraph(row.graph, row.queue)
    if (seconds !== null && (best === null || seconds > best)) best = seconds
  }
  return best
}

export type PlanStagingOptions = {
  sql: Sql
  input: false | StagingInput | undefined
  replayable: number
  stagedFromMessages: number
  sourceIds: string[]
}

/**
 * The staging the job would get (null: unstaged; the API stages only when asked, so clients written before staged
 * replays keep their behaviour), the defaults the plan dialog offers, and whether it offers them switched on (a job at
 * or over the admin's size).
 */
export async function planStaging(options: PlanStagingOptions): Promise<{ staging: ReplayStagingPlanDto | null; defaults: ReplayStagingPlanDto; suggested: boolean }> {
  const { input, replayable } = options
  const ttl = await retryTtlSeconds({ sql: options.sql, sourceIds: options.sourceIds })
  const resolve = (given: StagingInput): ReplayStagingPlanDto => {
    const shape = { canaryCount: given.canaryCount ?? null, canaryPercent: given.canaryPercent ?? null, rampPercents: given.rampPercents ?? [...DEFAULT_RAMP_PERCENTS] }
    const bounds = stageBounds(replayable, shape)
    return {
      ...shape,
      rampPercents: [...shape.rampPercents],
      windowSeconds: given.windowSeconds ?? suggestedWindowSeconds(ttl),
      windowFrom: given.windowSeconds !== undefined ? 'request' : ttl !== null ? 'topology' : 'default',
      retryTtlSeconds: ttl,
      haltPercent: given.haltPercent ?? DEFAULT_HALT_PERCENT,
      haltMinMessages: given.haltMinMessages ?? DEFAULT_HALT_MIN_MESSAGES,
      stages: bounds.map((b, i) => ({ throughSeq: b, size: b - (i === 0 ? 0 : bounds[i - 1]) })),
    }
  }
  const defaults = resolve({})
  const suggested = replayable > 0 && replayable >= options.stagedFromMessages
  if (input === false || input === undefined || replayable === 0) return { staging: null, defaults, suggested }
  return { staging: resolve(input), defaults, suggested }
}
