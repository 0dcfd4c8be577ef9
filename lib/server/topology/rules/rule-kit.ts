import 'server-only'
import type { EffectiveSettingDto, FindingDto, FindingKind, FindingSeverity, TopologyCheckDto, TopologyObjectRef } from '@/lib/shared/schemas/topology'
import type { AnalysedGraph, AnalysedQueue } from '../analyse-graph'
import type { TopologyEvidence } from '../topology-evidence'

/** What diagnose returns per finding: the stored finding without what the findings table adds, and its identity. */
export type DiagnosedFinding = Omit<FindingDto, 'id' | 'firstSeenAt' | 'lastSeenAt' | 'resolvedAt' | 'acknowledged'> & {
  /** kind + vhost + the objects: the same finding across runs (docs/topology.md#findings). */
  key: string
}

export type DoctorThresholds = {
  /** retry-count-high: an x-death count above this in stored letters. */
  retryCount: number
  /** requeue-to-head: at least this many redeliveries a second… */
  requeueRedeliverRate: number
  /** …while acks stay below this share of the redeliveries. */
  requeueAckRatio: number
  /** message-near-size-limit: stored bodies at least this share of the broker's max message size. */
  nearSizeRatio: number
}

export const DEFAULT_THRESHOLDS: DoctorThresholds = { retryCount: 10, requeueRedeliverRate: 1, requeueAckRatio: 0.05, nearSizeRatio: 0.9 }

export type RuleInput = {
  graph: AnalysedGraph
  evidence: TopologyEvidence
  thresholds: DoctorThresholds
  /** Exchanges that count as a retry loop's exit; unset: the heuristic of rules/retry-loops.ts. */
  exitExchanges?: string[]
}

export type RuleOutput = { findings: DiagnosedFinding[]; checks: TopologyCheckDto[] }

export type FindingDraft = {
  kind: FindingKind
  severity: FindingSeverity
  title: string
  why: string
  fix: string
  evidence: { label: string; value: string }[]
  objects: TopologyObjectRef[]
  cycle?: string[] | null
  messagesQuery?: string | null
}

export const objectKey = (objects: TopologyObjectRef[]) => objects.map((o) => `${o.type}:${o.name}`).join('|')

export function finding(graph: AnalysedGraph, draft: FindingDraft): DiagnosedFinding {
  return {
    ...draft,
    vhost: graph.vhost,
    cycle: draft.cycle ?? null,
    messagesQuery: draft.messagesQuery ?? null,
    key: `${draft.kind}|${graph.vhost}|${objectKey(draft.objects)}`,
  }
}

/** One check line per kind, counting the findings raised of that kind. */
export function check(kind: FindingKind, checked: number, description: string, findings: DiagnosedFinding[]): TopologyCheckDto {
  return { kind, checked, description, raised: findings.filter((f) => f.kind === kind).length }
}

const RANK: Record<FindingSeverity, number> = { error: 0, warning: 1, info: 2 }

/** Every rule's findings and check lines, in the rules' order. */
export function runRules<I>(rules: readonly ((input: I) => RuleOutput)[], input: I): RuleOutput {
  const findings: DiagnosedFinding[] = []
  const checks: TopologyCheckDto[] = []
  for (const rule of rules) {
    const out = rule(input)
    findings.push(...out.findings)
    checks.push(...out.checks)
  }
  return { findings, checks }
}

/** The order a diagnosis returns its findings in: worst first, then by key. */
export const worstFirst = (a: DiagnosedFinding, b: DiagnosedFinding) => RANK[a.severity] - RANK[b.severity] || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)

/** The worst severity among the findings naming each node; `idOf` gives an object's node id. */
export function worstSeverityByNode(findings: readonly DiagnosedFinding[], idOf: (ref: TopologyObjectRef) => string): Map<string, FindingSeverity> {
  const worst = new Map<string, FindingSeverity>()
  for (const f of findings) {
    for (const o of f.objects) {
      const id = idOf(o)
      const was = worst.get(id)
      if (was === undefined || RANK[f.severity] < RANK[was]) worst.set(id, f.severity)
    }
  }
  return worst
}

export const queueRef = (name: string): TopologyObjectRef => ({ type: 'queue', name })
export const exchangeRef = (name: string): TopologyObjectRef => ({ type: 'exchange', name })

/** `"orders"`, or `the default exchange` for "". */
export const exchangeLabel = (name: string) => (name === '' ? 'the default exchange' : `"${name}"`)

const origin = (s: Pick<EffectiveSettingDto, 'from' | 'policy'>) => (s.policy ? `${s.from} "${s.policy}"` : s.from)

/** A setting as evidence: `5000 (argument; overrides 60000 from policy "p")`; `unset` when nothing sets it. */
export function settingEvidence(q: AnalysedQueue, key: string): { label: string; value: string } {
  const setting = q.settings.byKey.get(key)
  if (!setting) return { label: key, value: 'unset' }
  const lost = (setting.overridden ?? []).map((o) => `${String(o.value)} from ${origin(o)}`)
  return { label: key, value: `${String(setting.value)} (${origin(setting)}${lost.length > 0 ? `; overrides ${lost.join(', ')}` : ''})` }
}

export const settingValue = (q: AnalysedQueue, key: string) => q.settings.byKey.get(key)?.value ?? null
export const hasSetting = (q: AnalysedQueue, key: string) => settingValue(q, key) !== null

export function statsEvidence(q: AnalysedQueue): { label: string; value: string }[] {
  const rate = (value: number | null) => (value === null ? 'no sample' : `${value.toFixed(2)}/s`)
  return [
    { label: 'messages', value: String(q.queue.messages) },
    { label: 'consumers', value: String(q.queue.consumers) },
    { label: 'publish rate', value: rate(q.queue.rates.publish) },
    { label: 'redeliver rate', value: rate(q.queue.rates.redeliver) },
    { label: 'ack rate', value: rate(q.queue.rates.ack) },
  ]
}

/** A /messages query string (docs/topology.md#evidence-from-stored-letters). */
export function messagesQuery(params: [string, string][]): string {
  return new URLSearchParams(params).toString()
}

/** The source draining a queue, as the /messages filter's first parameter, when there is one. */
export const sourceParams = (sourceId: string | null | undefined): [string, string][] => (sourceId ? [['source', sourceId]] : [])

export const queueList = (graph: AnalysedGraph) => [...graph.queues.values()].sort((a, b) => (a.queue.name < b.queue.name ? -1 : 1))
