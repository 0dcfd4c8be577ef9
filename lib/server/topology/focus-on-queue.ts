import 'server-only'
import type { TopologyEdgeDto, TopologyNodeDto, TopologyObjectRef } from '@/lib/shared/schemas/topology'

type FocusableGraph = { nodes: TopologyNodeDto[]; edges: TopologyEdgeDto[]; findings: { objects: TopologyObjectRef[] }[] }

/**
 * The sub-graph around one queue, for a source's page: everything that reaches it within `depth` hops backwards
 * (bindings, dead-letter and alternate edges into it), and where it leads within `depth` hops forwards (its DLX and
 * what that routes to). Findings are kept when they name a node of the sub-graph. Works on a fresh diagnosis and on
 * the stored graph the page reads.
 */
export function focusOnQueue<G extends FocusableGraph>(diagnosis: G, queueName: string, depth: number): G {
  return focusOnNode(diagnosis, `q:${queueName}`, depth)
}

/** The sub-graph around any node (a JetStream source's stream: `s:<name>`), as focusOnQueue draws a queue's. */
export function focusOnNode<G extends FocusableGraph>(diagnosis: G, start: string, depth: number): G {
  const keep = new Set<string>()
  if (diagnosis.nodes.some((n) => n.id === start)) keep.add(start)
  const walk = (direction: 'forward' | 'backward') => {
    let frontier = keep.has(start) ? [start] : []
    const seen = new Set(frontier)
    for (let hop = 0; hop < depth && frontier.length > 0; hop++) {
      const next: string[] = []
      for (const edge of diagnosis.edges) {
        const [from, to] = direction === 'forward' ? [edge.from, edge.to] : [edge.to, edge.from]
        if (frontier.includes(from) && !seen.has(to)) {
          seen.add(to)
          next.push(to)
        }
      }
      next.forEach((id) => keep.add(id))
      frontier = next
    }
  }
  walk('forward')
  walk('backward')
  const nodes = diagnosis.nodes.filter((n) => keep.has(n.id))
  const names = new Set(nodes.map((n) => `${n.type}:${n.name}`))
  const findings = diagnosis.findings.filter((f) => f.objects.some((o) => names.has(`${o.type}:${o.name}`)))
  return {
    ...diagnosis,
    nodes,
    edges: diagnosis.edges.filter((e) => keep.has(e.from) && keep.has(e.to)),
    findings,
  }
}
