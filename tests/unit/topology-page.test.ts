import { describe, expect, it } from 'vitest'
import { parseDelay } from '@/components/topology/delay'
import { NODE_CAP, visibleGraph } from '@/components/topology/visible-graph'
import type { TopologyEdgeDto, TopologyNodeDto } from '@/lib/shared/schemas/topology'

const queue = (name: string, severity: TopologyNodeDto['severity'] = null): TopologyNodeDto => ({
  id: `q:${name}`,
  type: 'queue',
  name,
  queueType: 'classic',
  role: 'other',
  settings: [],
  stats: { messages: 0, consumers: 0, publishRate: null, deliverRate: null, redeliverRate: null, ackRate: null },
  sourceId: null,
  severity,
})
const exchange = (name: string): TopologyNodeDto => ({ id: `x:${name}`, type: 'exchange', name, exchangeType: 'direct', alternateExchange: null, internal: false, severity: null })
const bind = (from: string, to: string): TopologyEdgeDto => ({ id: `${from}>${to}`, from, to, kind: 'binding', routingKey: null })

/** One exchange bound to `n` queues; the queues named in `bad` have an error finding. */
function star(n: number, bad: number[] = []) {
  const nodes = [exchange('hub'), ...Array.from({ length: n }, (_, i) => queue(`q${i}`, bad.includes(i) ? 'error' : null))]
  const edges = Array.from({ length: n }, (_, i) => bind('x:hub', `q:q${i}`))
  return { nodes, edges }
}

describe('the graph the topology page draws', () => {
  it('draws everything up to the cap', () => {
    const graph = visibleGraph(star(NODE_CAP - 1), { filter: '', showAll: false })
    expect(graph).toMatchObject({ total: NODE_CAP, reduced: null })
    expect(graph.nodes).toHaveLength(NODE_CAP)
    expect(graph.edges).toHaveLength(NODE_CAP - 1)
  })

  it('above the cap shows the nodes with findings and their neighbours, and refuses "show all"', () => {
    const graph = visibleGraph(star(500, [7, 42]), { filter: '', showAll: true })
    expect(graph.reduced).toBe('findings')
    expect(graph.total).toBe(501)
    expect(graph.nodes.map((n) => n.id).sort()).toEqual(['q:q42', 'q:q7', 'x:hub'])
    expect(graph.edges.map((e) => e.to).sort()).toEqual(['q:q42', 'q:q7'])
  })

  it('filters by a name substring (case-insensitive), with the neighbours, and keeps only edges between drawn nodes', () => {
    const graph = visibleGraph(star(500), { filter: 'Q49', showAll: false })
    expect(graph.reduced).toBe('filter')
    expect(graph.nodes.map((n) => n.id).sort()).toEqual(['q:q49', 'q:q490', 'q:q491', 'q:q492', 'q:q493', 'q:q494', 'q:q495', 'q:q496', 'q:q497', 'q:q498', 'q:q499', 'x:hub'])
    expect(graph.edges.every((e) => e.from === 'x:hub')).toBe(true)
  })

  it('cuts a match larger than the cap at the cap, keeping the matches before their neighbours', () => {
    const graph = visibleGraph(star(700), { filter: 'q', showAll: false })
    expect(graph.reduced).toBe('cap')
    expect(graph.nodes).toHaveLength(NODE_CAP)
    expect(graph.nodes.some((n) => n.id === 'x:hub')).toBe(false)
  })
})

describe('the builder form’s delays', () => {
  it.each([
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['250ms', 250],
    [' 45 ', 45_000],
  ])('%s is %d ms', (text, ms) => expect(parseDelay(text)).toBe(ms))

  it.each(['', '1.5h', '-3s', '10d', 'soon'])('refuses %j', (text) => expect(parseDelay(text)).toBeNull())
})
