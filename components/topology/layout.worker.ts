/// <reference lib="webworker" />
import ELK from 'elkjs/lib/elk.bundled.js'
import type { ElkExtendedEdge } from 'elkjs/lib/elk-api'

/**
 * The graph's automatic layout, off the main thread (docs/topology.md, "The page"): ELK's layered algorithm on a
 * few hundred nodes takes long enough to freeze the page. The bundled ELK runs synchronously inside this worker.
 */
export type LayoutRequest = {
  id: number
  nodes: { id: string; width: number; height: number }[]
  /** `label`: the text drawn on the edge, with its size, so the layout keeps room for it. */
  edges: { id: string; from: string; to: string; label?: { text: string; width: number; height: number } }[]
}
export type Point = { x: number; y: number }
/** Node positions (top left) and each edge's route as ELK drew it (start, bends, end), so edges avoid the nodes. */
export type LayoutResponse =
  | { id: number; positions: Record<string, Point>; routes: Record<string, Point[]>; labels: Record<string, Point> }
  | { id: number; error: string }

const elk = new ELK()

const scope = self as unknown as DedicatedWorkerGlobalScope

scope.onmessage = async (event: MessageEvent<LayoutRequest>) => {
  const { id, nodes, edges } = event.data
  try {
    const graph = await elk.layout({
      id: 'root',
      layoutOptions: {
        'elk.algorithm': 'layered',
        'elk.direction': 'RIGHT',
        'elk.layered.spacing.nodeNodeBetweenLayers': '50',
        'elk.spacing.nodeNode': '24',
        'elk.layered.nodePlacement.strategy': 'BRANDES_KOEPF',
        'elk.separateConnectedComponents': 'true',
        'elk.spacing.componentComponent': '40',
        'elk.edgeRouting': 'ORTHOGONAL',
        'elk.layered.spacing.edgeNodeBetweenLayers': '14',
        'elk.edgeLabels.placement': 'CENTER',
        'elk.layered.edgeLabels.sideSelection': 'SMART_DOWN',
      },
      children: nodes.map((n) => ({ id: n.id, width: n.width, height: n.height })),
      edges: edges.map((e) => ({ id: e.id, sources: [e.from], targets: [e.to], labels: e.label ? [{ id: `${e.id}:label`, ...e.label }] : [] })),
    })
    const positions: Record<string, Point> = {}
    for (const child of graph.children ?? []) positions[child.id] = { x: child.x ?? 0, y: child.y ?? 0 }
    const routes: Record<string, Point[]> = {}
    const labels: Record<string, Point> = {}
    for (const edge of (graph.edges ?? []) as ElkExtendedEdge[]) {
      const section = edge.sections?.[0]
      if (section) routes[edge.id] = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint]
      // The label's centre (ELK gives its top left corner).
      const label = edge.labels?.[0]
      if (label?.x !== undefined && label.y !== undefined) labels[edge.id] = { x: label.x + (label.width ?? 0) / 2, y: label.y + (label.height ?? 0) / 2 }
    }
    scope.postMessage({ id, positions, routes, labels } satisfies LayoutResponse)
  } catch (error) {
    scope.postMessage({ id, error: error instanceof Error ? error.message : String(error) } satisfies LayoutResponse)
  }
}
