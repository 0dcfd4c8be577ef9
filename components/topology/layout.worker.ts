/// <reference lib="webworker" />
import ELK from 'elkjs/lib/elk.bundled.js'

/**
 * The graph's automatic layout, off the main thread (docs/topology.md, "The page"): ELK's layered algorithm on a
 * few hundred nodes takes long enough to freeze the page. The bundled ELK runs synchronously inside this worker.
 */
export type LayoutRequest = {
  id: number
  nodes: { id: string; width: number; height: number }[]
  edges: { id: string; from: string; to: string }[]
}
export type LayoutResponse = { id: number; positions: Record<string, { x: number; y: number }> } | { id: number; error: string }

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
        'elk.layered.spacing.nodeNodeBetweenLayers': '70',
        'elk.spacing.nodeNode': '24',
        'elk.layered.nodePlacement.strategy': 'BRANDES_KOEPF',
        'elk.separateConnectedComponents': 'true',
        'elk.spacing.componentComponent': '40',
      },
      children: nodes.map((n) => ({ id: n.id, width: n.width, height: n.height })),
      edges: edges.map((e) => ({ id: e.id, sources: [e.from], targets: [e.to] })),
    })
    const positions: Record<string, { x: number; y: number }> = {}
    for (const child of graph.children ?? []) positions[child.id] = { x: child.x ?? 0, y: child.y ?? 0 }
    scope.postMessage({ id, positions } satisfies LayoutResponse)
  } catch (error) {
    scope.postMessage({ id, error: error instanceof Error ? error.message : String(error) } satisfies LayoutResponse)
  }
}
