import type { FindingSeverity, TopologyDto, TopologyEdgeDto, TopologyNodeDto } from '@/lib/shared/schemas/topology'

/**
 * At most this many nodes are drawn at once (docs/topology.md, "The page"): beyond it a layout takes seconds and the
 * picture says nothing. Larger graphs show the nodes with findings and their neighbours, or what the filter matches.
 */
export const NODE_CAP = 300

const SEVERITY_RANK: Record<FindingSeverity, number> = { error: 0, warning: 1, info: 2 }

export type VisibleGraph = {
  nodes: TopologyNodeDto[]
  edges: TopologyEdgeDto[]
  /** Nodes in the vhost (or the source's part of it). */
  total: number
  /** Why not everything is drawn: null when it is. */
  reduced: null | 'findings' | 'filter' | 'cap'
}

function withNeighbours(seed: Set<string>, edges: readonly TopologyEdgeDto[]): Set<string> {
  const out = new Set(seed)
  for (const e of edges) {
    if (seed.has(e.from)) out.add(e.to)
    if (seed.has(e.to)) out.add(e.from)
  }
  return out
}

function rank(node: TopologyNodeDto): number {
  return node.severity ? SEVERITY_RANK[node.severity] : 3
}

/**
 * What the graph draws: everything up to NODE_CAP nodes; above it (or with a name filter) the matching nodes, or
 * those with findings, plus their neighbours, worst first, cut at NODE_CAP. `showAll` is honoured only under the cap.
 */
export function visibleGraph(dto: Pick<TopologyDto, 'nodes' | 'edges'>, options: { filter: string; showAll: boolean }): VisibleGraph {
  const total = dto.nodes.length
  const filter = options.filter.trim().toLowerCase()
  if (!filter && (total <= NODE_CAP || options.showAll)) {
    if (total <= NODE_CAP) return { nodes: dto.nodes, edges: dto.edges, total, reduced: null }
  }
  const seed = new Set(dto.nodes.filter((n) => (filter ? n.name.toLowerCase().includes(filter) : n.severity !== null)).map((n) => n.id))
  const wanted = withNeighbours(seed, dto.edges)
  let nodes = dto.nodes.filter((n) => wanted.has(n.id))
  let reduced: VisibleGraph['reduced'] = filter ? 'filter' : 'findings'
  if (nodes.length > NODE_CAP) {
    // The seeds first (worst severity first), then their neighbours: the cut keeps what the reader asked about.
    nodes = [...nodes].sort((a, b) => Number(!seed.has(a.id)) - Number(!seed.has(b.id)) || rank(a) - rank(b)).slice(0, NODE_CAP)
    reduced = 'cap'
  }
  const kept = new Set(nodes.map((n) => n.id))
  return { nodes, edges: dto.edges.filter((e) => kept.has(e.from) && kept.has(e.to)), total, reduced }
}
