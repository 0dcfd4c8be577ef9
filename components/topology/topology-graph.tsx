'use client'

import '@xyflow/react/dist/style.css'
import {
  Background,
  BaseEdge,
  Controls,
  Handle,
  MarkerType,
  MiniMap,
  Position,
  ReactFlow,
  useReactFlow,
  getBezierPath,
  type Edge,
  type EdgeProps,
  type Node,
  type NodeProps,
} from '@xyflow/react'
import { memo, useEffect, useMemo, type ReactNode } from 'react'
import { cn } from '@/lib/client/cn'
import { compactCount, visibleText } from '@/lib/client/format'
import { useDisplayPrefs } from '@/lib/client/use-display-prefs'
import type { FindingSeverity, TopologyEdgeDto, TopologyNodeDto } from '@/lib/shared/schemas/topology'
import type { Point } from './layout.worker'
import { useGraphLayout } from './use-graph-layout'

const SIZE = { queue: { width: 200, height: 46 }, exchange: { width: 180, height: 34 }, stream: { width: 200, height: 46 }, consumer: { width: 190, height: 40 } } as const
const SIZE_BY_PREFIX: Record<string, (typeof SIZE)[keyof typeof SIZE]> = { q: SIZE.queue, x: SIZE.exchange, s: SIZE.stream, c: SIZE.consumer }

/** The marks of a node with findings: the same colours as the findings list's badges. */
const SEVERITY_RING: Record<FindingSeverity, string> = {
  error: 'ring-2 ring-red-500 border-red-500',
  warning: 'ring-2 ring-amber-400 border-amber-500',
  info: 'ring-2 ring-sky-400 border-sky-500',
}

const SEVERITY_DOT: Record<FindingSeverity, string> = { error: 'bg-red-500', warning: 'bg-amber-500', info: 'bg-sky-500' }

const ROLE_BAR: Record<string, string> = { work: 'bg-emerald-500', delay: 'bg-violet-500', dlq: 'bg-red-400', other: 'bg-zinc-300' }

type NodeData = { dto: TopologyNodeDto; selected: boolean; dimmed: boolean }
type FlowNode = Node<NodeData, TopologyNodeDto['type']>

function SeverityMark({ severity }: { severity: FindingSeverity | null }) {
  if (!severity) return null
  return <span aria-label={`${severity} finding`} className={cn('absolute -top-1.5 -right-1.5 size-3 rounded-full ring-2 ring-white', SEVERITY_DOT[severity])} />
}

const HANDLE = '!size-1.5 !min-w-0 !border-0 !bg-zinc-300'

/** A box with a coloured bar on its left, a name and a line of facts: queues and streams. */
function BarNode({ node, data, border, bar, facts, title }: { node: TopologyNodeDto; data: NodeData; border: string; bar: string; facts: ReactNode; title: string }) {
  return (
    <div
      data-node-id={node.id}
      data-severity={node.severity ?? ''}
      title={title}
      className={cn(
        'relative flex h-[46px] w-[200px] items-stretch rounded-md border bg-white text-left shadow-sm',
        border,
        node.severity && SEVERITY_RING[node.severity],
        data.selected && 'outline-2 outline-offset-2 outline-brand',
        data.dimmed && 'opacity-40',
      )}
    >
      <Handle type="target" position={Position.Left} className={HANDLE} />
      <span aria-hidden className={cn('w-1 shrink-0 rounded-l-[5px]', bar)} />
      <span className="flex min-w-0 flex-1 flex-col justify-center px-2">
        <span className="truncate font-mono text-[11px] font-medium text-zinc-900">{visibleText(node.name)}</span>
        <span className="truncate text-[10px] text-zinc-500">{facts}</span>
      </span>
      <Handle type="source" position={Position.Right} className={HANDLE} />
      <SeverityMark severity={node.severity} />
    </div>
  )
}

const QueueNode = memo(function QueueNode({ data }: NodeProps<FlowNode>) {
  const node = data.dto
  if (node.type !== 'queue') return null
  return (
    <BarNode
      node={node}
      data={data}
      border="border-zinc-300"
      bar={ROLE_BAR[node.role]}
      title={[`${node.queueType} queue ${node.name}`, ...node.settings.map((st) => `${st.key} = ${String(st.value)} (${st.policy ? `${st.from} ${st.policy}` : st.from})`)].join('\n')}
      facts={`${node.queueType} · ${node.role} · ${compactCount(node.stats.messages)} msg · ${node.stats.consumers} cons`}
    />
  )
})

const ExchangeNode = memo(function ExchangeNode({ data }: NodeProps<FlowNode>) {
  const node = data.dto
  if (node.type !== 'exchange') return null
  // The doctor draws an exchange that queues name but the broker lacks as type "missing" (docs/topology.md).
  const missing = node.exchangeType === 'missing'
  return (
    <div
      data-node-id={node.id}
      data-severity={node.severity ?? ''}
      title={missing ? `exchange ${node.name}: named as a dead-letter or alternate exchange, but it does not exist` : `${node.exchangeType} exchange ${node.name || '(default)'}`}
      className={cn(
        'relative flex h-[34px] w-[180px] items-center gap-1.5 rounded-full border border-zinc-400 bg-zinc-50 px-3',
        missing && 'border-dashed bg-white',
        node.severity && SEVERITY_RING[node.severity],
        data.selected && 'outline-2 outline-offset-2 outline-brand',
        data.dimmed && 'opacity-40',
      )}
    >
      <Handle type="target" position={Position.Left} className={HANDLE} />
      <span className="shrink-0 rounded bg-zinc-200 px-1 text-[9px] font-semibold text-zinc-600 uppercase">{node.exchangeType}</span>
      <span className="truncate font-mono text-[11px] text-zinc-800">{node.name ? visibleText(node.name) : '(default)'}</span>
      <Handle type="source" position={Position.Right} className={HANDLE} />
      <SeverityMark severity={node.severity} />
    </div>
  )
})

/** A JetStream stream: teal, and amber where it keeps consumers' failure advisories (the capture). */
const StreamNode = memo(function StreamNode({ data }: NodeProps<FlowNode>) {
  const node = data.dto
  if (node.type !== 'stream') return null
  return (
    <BarNode
      node={node}
      data={data}
      border="border-teal-300"
      bar={node.keepsAdvisories ? 'bg-amber-500' : 'bg-teal-500'}
      title={[`JetStream stream ${node.name}${node.keepsAdvisories ? ' (keeps failure advisories)' : ''}`, ...node.settings.map((st) => `${st.key} = ${st.value}`)].join('\n')}
      facts={`${node.keepsAdvisories ? 'advisories' : 'stream'} · ${node.retention} · ${compactCount(node.stats.messages)} msg${node.lazarus ? ' · Lazarus' : ''}`}
    />
  )
})

/** A JetStream consumer: its name large, how it redelivers small. */
const ConsumerNode = memo(function ConsumerNode({ data }: NodeProps<FlowNode>) {
  const node = data.dto
  if (node.type !== 'consumer') return null
  const setting = (key: string) => node.settings.find((st) => st.key === key)?.value ?? '?'
  return (
    <div
      data-node-id={node.id}
      data-severity={node.severity ?? ''}
      title={[`JetStream consumer ${node.consumer} of ${node.stream}`, ...node.settings.map((st) => `${st.key} = ${st.value}`)].join('\n')}
      className={cn(
        'relative flex h-[40px] w-[190px] flex-col justify-center rounded-lg border border-dashed border-teal-400 bg-teal-50/60 px-2.5',
        node.severity && SEVERITY_RING[node.severity],
        data.selected && 'outline-2 outline-offset-2 outline-brand',
        data.dimmed && 'opacity-40',
      )}
    >
      <Handle type="target" position={Position.Left} className={HANDLE} />
      <span className="truncate font-mono text-[11px] font-medium text-zinc-900">{visibleText(node.consumer)}</span>
      <span className="truncate text-[10px] text-zinc-500">
        {node.lazarus ? 'Lazarus capture' : `max_deliver ${setting('max_deliver')} · ack ${setting('ack_wait')}`}
      </span>
      <Handle type="source" position={Position.Right} className={HANDLE} />
      <SeverityMark severity={node.severity} />
    </div>
  )
})

const NODE_TYPES = { queue: QueueNode, exchange: ExchangeNode, stream: StreamNode, consumer: ConsumerNode }

/**
 * Binding edges are quiet; dead-letter edges are the point of the page (thick, red, dashed); alternates violet.
 * JetStream: a stream's consumers in teal, and where a consumer's failure advisories are kept, amber and dashed (its
 * dead letters' way, as far as JetStream has one).
 */
const EDGE_LOOK: Record<TopologyEdgeDto['kind'], { color: string; width: number; dash?: string }> = {
  binding: { color: 'var(--color-zinc-400)', width: 1.25 },
  'dead-letter': { color: 'var(--color-red-600)', width: 2.25, dash: '6 4' },
  alternate: { color: 'var(--color-violet-600)', width: 1.75, dash: '2 4' },
  consumes: { color: 'var(--color-teal-600)', width: 1.25 },
  advisories: { color: 'var(--color-amber-600)', width: 2, dash: '6 4' },
}

/**
 * Colour and dash tell the kind; the label is only the key (a dead-letter edge without one keeps the message's keys), a
 * consumer's filter, or which advisories a stream keeps when it keeps only one kind.
 */
function edgeLabel(edge: TopologyEdgeDto): string | undefined {
  if (edge.kind === 'alternate') return undefined
  if (edge.kind === 'advisories') return edge.routingKey?.includes(',') ? undefined : `${edge.routingKey} only`
  if (edge.kind === 'dead-letter') return edge.routingKey === null ? undefined : `key ${edge.routingKey}`
  return edge.routingKey || undefined
}

type EdgeData = { kind: TopologyEdgeDto['kind']; route: Point[] | null; labelAt: Point | null }
type FlowEdge = Edge<EdgeData, 'routed'>

/** An SVG path through ELK's orthogonal route, its corners slightly rounded. */
function routePath(points: Point[]): string {
  const r = 6
  let d = `M ${points[0].x} ${points[0].y}`
  for (let i = 1; i < points.length - 1; i++) {
    const [a, b, c] = [points[i - 1], points[i], points[i + 1]]
    const inLen = Math.hypot(b.x - a.x, b.y - a.y)
    const outLen = Math.hypot(c.x - b.x, c.y - b.y)
    const k = Math.min(r, inLen / 2, outLen / 2)
    const p1 = { x: b.x - ((b.x - a.x) / (inLen || 1)) * k, y: b.y - ((b.y - a.y) / (inLen || 1)) * k }
    const p2 = { x: b.x + ((c.x - b.x) / (outLen || 1)) * k, y: b.y + ((c.y - b.y) / (outLen || 1)) * k }
    d += ` L ${p1.x} ${p1.y} Q ${b.x} ${b.y} ${p2.x} ${p2.y}`
  }
  const last = points[points.length - 1]
  return `${d} L ${last.x} ${last.y}`
}

/** Where the label goes: the middle of the route's longest segment, where it has room. */
function labelPoint(points: Point[]): Point {
  let best = { x: points[0].x, y: points[0].y }
  let longest = -1
  for (let i = 1; i < points.length; i++) {
    const length = Math.hypot(points[i].x - points[i - 1].x, points[i].y - points[i - 1].y)
    if (length > longest) {
      longest = length
      best = { x: (points[i].x + points[i - 1].x) / 2, y: (points[i].y + points[i - 1].y) / 2 }
    }
  }
  return best
}

/** An edge along the route the layout computed (edges then go around nodes, back edges included). */
function RoutedEdge({ id, data, style, markerEnd, label, labelStyle, labelBgStyle, labelBgPadding, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition }: EdgeProps<FlowEdge>) {
  const route = data?.route
  let path: string
  let at: Point
  if (route && route.length >= 2) {
    path = routePath(route)
    at = data?.labelAt ?? labelPoint(route)
  } else {
    const [bezier, x, y] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition })
    path = bezier
    at = { x, y }
  }
  return (
    <BaseEdge
      id={id}
      path={path}
      style={style}
      markerEnd={markerEnd}
      label={label}
      labelX={at.x}
      labelY={at.y}
      labelStyle={labelStyle}
      labelShowBg
      labelBgStyle={labelBgStyle}
      labelBgPadding={labelBgPadding}
    />
  )
}

const EDGE_TYPES = { routed: RoutedEdge }

function toFlowEdge(edge: TopologyEdgeDto, highlighted: boolean, route: Point[] | null, labelAt: Point | null): FlowEdge {
  const look = EDGE_LOOK[edge.kind]
  return {
    id: edge.id,
    type: 'routed',
    source: edge.from,
    target: edge.to,
    label: edgeLabel(edge),
    data: { kind: edge.kind, route, labelAt },
    className: `edge-${edge.kind}`,
    style: { stroke: look.color, strokeWidth: highlighted ? look.width + 1 : look.width, strokeDasharray: look.dash },
    markerEnd: { type: MarkerType.ArrowClosed, color: look.color, width: 16, height: 16 },
    labelStyle: { fontSize: 10, fill: edge.kind === 'dead-letter' ? 'var(--color-red-700)' : 'var(--color-zinc-600)' },
    labelBgStyle: { fill: 'var(--color-white)', fillOpacity: 0.85 },
    labelBgPadding: [3, 1],
    zIndex: edge.kind === 'dead-letter' ? 1 : 0,
  }
}

/** Centres the view on a node when `centerOn` changes (a finding's object clicked in the list). */
function CenterOn({ target, positions }: { target: { id: string; seq: number } | null; positions: Record<string, Point> | null }) {
  const flow = useReactFlow()
  useEffect(() => {
    if (!target || !positions) return
    const p = positions[target.id]
    if (!p) return
    const size = SIZE_BY_PREFIX[target.id.slice(0, 1)] ?? SIZE.queue
    const zoom = Math.max(flow.getZoom(), 1)
    // The node's panel covers the graph's right 300 px (380 px from 1280 px up): centre the node in what stays visible.
    const panel = window.innerWidth >= 1280 ? 380 : 300
    void flow.setCenter(p.x + size.width / 2 + panel / 2 / zoom, p.y + size.height / 2, { zoom, duration: 300 })
  }, [target, positions, flow])
  return null
}

export type TopologyGraphProps = {
  nodes: TopologyNodeDto[]
  edges: TopologyEdgeDto[]
  selectedId: string | null
  /** Nodes to stress (a finding's objects or cycle); the others are dimmed while it is set. */
  highlight: ReadonlySet<string> | null
  centerOn: { id: string; seq: number } | null
  onSelect: (id: string | null) => void
}

export function TopologyGraph({ nodes, edges, selectedId, highlight, centerOn, onSelect }: TopologyGraphProps) {
  const { theme } = useDisplayPrefs()
  const layoutKey = useMemo(() => nodes.map((n) => n.id).join('\n') + '\n--\n' + edges.map((e) => `${e.from}>${e.to}`).join('\n'), [nodes, edges])
  const { layout, error, pending } = useGraphLayout(layoutKey, {
    nodes: nodes.map((n) => ({ id: n.id, ...SIZE[n.type] })),
    edges: edges.map((e) => {
      const text = edgeLabel(e)
      // 10 px text in a monospace-ish estimate, plus the label's padding.
      return { id: e.id, from: e.from, to: e.to, label: text ? { text, width: text.length * 5.6 + 8, height: 14 } : undefined }
    }),
  })

  const positions = layout?.positions ?? null
  const flowNodes = useMemo<FlowNode[]>(
    () =>
      positions
        ? nodes.map((dto) => ({
            id: dto.id,
            type: dto.type,
            position: positions[dto.id] ?? { x: 0, y: 0 },
            data: { dto, selected: dto.id === selectedId, dimmed: highlight !== null && !highlight.has(dto.id) },
            width: SIZE[dto.type].width,
            height: SIZE[dto.type].height,
            draggable: false,
            connectable: false,
            ariaLabel: `${dto.type} ${dto.name || '(default)'}${dto.severity ? `, ${dto.severity} finding` : ''}`,
          }))
        : [],
    [nodes, positions, selectedId, highlight],
  )
  const flowEdges = useMemo(
    () => (layout ? edges.map((e) => toFlowEdge(e, highlight !== null && highlight.has(e.from) && highlight.has(e.to), layout.routes[e.id] ?? null, layout.labels[e.id] ?? null)) : []),
    [edges, layout, highlight],
  )

  return (
    <div className="relative h-full w-full" data-testid="topology-graph" data-layout={pending ? 'pending' : 'done'}>
      {error && (
        <p role="alert" className="absolute inset-x-3 top-3 z-10 rounded border border-red-200 bg-red-50 px-2 py-1 text-xs text-red-800">
          The layout failed: {error}
        </p>
      )}
      {pending && !positions && <p className="absolute inset-0 z-10 grid place-items-center text-xs text-zinc-500">Laying out {nodes.length} nodes…</p>}
      <ReactFlow
        key={layoutKey}
        nodes={flowNodes}
        edges={flowEdges}
        nodeTypes={NODE_TYPES}
        edgeTypes={EDGE_TYPES}
        colorMode={theme}
        fitView
        fitViewOptions={{ padding: 0.12, maxZoom: 1.2, minZoom: 0.55 }}
        minZoom={0.1}
        maxZoom={2}
        nodesDraggable={false}
        nodesConnectable={false}
        edgesFocusable={false}
        onlyRenderVisibleElements={nodes.length > 120}
        onNodeClick={(_, node) => onSelect(node.id)}
        onPaneClick={() => onSelect(null)}
      >
        <Background gap={16} size={1} color="var(--color-zinc-200)" />
        <Controls showInteractive={false} position="top-left" />
        {nodes.length > 40 && <MiniMap pannable zoomable position="top-right" className="!bg-white" nodeColor={(n) => ((n.data as NodeData).dto.severity === 'error' ? 'var(--color-red-500)' : 'var(--color-zinc-300)')} />}
        <CenterOn target={centerOn} positions={positions} />
      </ReactFlow>
      <Legend jetstream={nodes.some((n) => n.type === 'stream' || n.type === 'consumer')} rabbitmq={nodes.some((n) => n.type === 'queue' || n.type === 'exchange')} />
    </div>
  )
}

function Legend({ jetstream, rabbitmq }: { jetstream: boolean; rabbitmq: boolean }) {
  return (
    <div className="pointer-events-none absolute bottom-2 left-2 flex flex-wrap items-center gap-x-3 gap-y-1 rounded border border-zinc-200 bg-white/90 px-2 py-1 text-[10px] text-zinc-600">
      {rabbitmq && <RabbitLegend />}
      {jetstream && <JetStreamLegend />}
      <span className="flex items-center gap-1">
        <span className="size-2 rounded-full bg-red-500" /> error
        <span className="ml-1 size-2 rounded-full bg-amber-500" /> warning
        <span className="ml-1 size-2 rounded-full bg-sky-500" /> info
      </span>
    </div>
  )
}

/** A node's shape in the legend. */
function Swatch({ className, label }: { className: string; label: string }) {
  return (
    <span className="flex items-center gap-1">
      <span className={cn('inline-block h-2.5 w-4', className)} /> {label}
    </span>
  )
}

/** An edge kind's line in the legend, drawn as the graph draws it. */
function EdgeSwatch({ kind, label, className }: { kind: TopologyEdgeDto['kind']; label: string; className?: string }) {
  const look = EDGE_LOOK[kind]
  return (
    <span className={cn('flex items-center gap-1', className)}>
      <svg width="22" height="6" aria-hidden>
        <line x1="0" y1="3" x2="22" y2="3" stroke={look.color} strokeWidth={look.width} strokeDasharray={look.dash} />
      </svg>
      {label}
    </span>
  )
}

function JetStreamLegend() {
  return (
    <>
      <Swatch className="rounded-sm border border-teal-300 bg-white" label="stream" />
      <Swatch className="rounded border border-dashed border-teal-400 bg-teal-50" label="consumer" />
      <EdgeSwatch kind="advisories" label="failure advisories kept by" className="font-medium text-amber-700" />
    </>
  )
}

function RabbitLegend() {
  return (
    <>
      <Swatch className="rounded-full border border-zinc-400 bg-zinc-50" label="exchange" />
      <Swatch className="rounded-sm border border-zinc-300 bg-white" label="queue" />
      <EdgeSwatch kind="binding" label="binding" />
      <EdgeSwatch kind="dead-letter" label="dead letters" className="font-medium text-red-700" />
      <EdgeSwatch kind="alternate" label="alternate" />
    </>
  )
}
