import 'server-only'
import { RE2JS } from 're2js'
import type { EffectiveSettingDto, SettingOrigin } from '@/lib/shared/schemas/topology'
import type { BrokerSnapshot, JsonArguments, QueueType, SnapshotExchange, SnapshotPolicy, SnapshotQueue } from './broker-snapshot'

/*
 * Effective settings, computed as the broker does (docs/topology.md#effective-settings, docs/rabbitmq.md#dead-lettering):
 * - at most one user policy and one operator policy apply to an object: among those whose pattern matches its name and
 *   whose apply-to fits its kind, the one of the highest priority;
 * - for the numeric limits the lowest value among the argument, the policy and the operator policy wins;
 * - for any other key the operator policy wins, then the `x-` argument, then the user policy.
 * The policies are matched here rather than read from effective_policy_definition, which older brokers leave out
 * with statistics disabled; tests check both agree on 3.10.
 */

/** Keys where the lower value wins, whoever sets it. */
export const LOWER_WINS_KEYS = new Set(['max-length', 'max-length-bytes', 'message-ttl', 'expires', 'delivery-limit'])

/** Policy keys of a queue the doctor reads, each with its optional argument. */
export const QUEUE_SETTING_KEYS = [
  'dead-letter-exchange',
  'dead-letter-routing-key',
  'dead-letter-strategy',
  'message-ttl',
  'expires',
  'max-length',
  'max-length-bytes',
  'overflow',
  'delivery-limit',
  'queue-mode',
] as const
export type QueueSettingKey = (typeof QUEUE_SETTING_KEYS)[number]

type SettingValue = EffectiveSettingDto['value']
type Candidate = { value: SettingValue; from: SettingOrigin; policy?: string }

const policyFits = (applyTo: SnapshotPolicy['applyTo'], target: { kind: 'exchange' } | { kind: 'queue'; type: QueueType }): boolean => {
  if (applyTo === 'all') return true
  if (target.kind === 'exchange') return applyTo === 'exchanges'
  if (applyTo === 'queues') return true
  return (applyTo === 'classic_queues' && target.type === 'classic') || (applyTo === 'quorum_queues' && target.type === 'quorum') || (applyTo === 'streams' && target.type === 'stream')
}

const patternCache = new Map<string, RE2JS | null>()
function patternOf(source: string): RE2JS | null {
  if (!patternCache.has(source)) {
    // The broker's patterns are PCRE. They run here on RE2 (docs/decisions/0010-re2js-for-user-patterns.md): whoever
    // can set a policy on the broker must not be able to stall the doctor with a backtracking pattern. RE2 agrees with
    // PCRE on everything policies use in practice; a pattern it cannot read (a backreference, a lookaround) matches
    // nothing here, and the check against effective_policy_definition shows it.
    let compiled: RE2JS | null
    try {
      compiled = RE2JS.compile(source)
    } catch {
      compiled = null
    }
    patternCache.set(source, compiled)
  }
  return patternCache.get(source) ?? null
}

/** The policy that applies to an object: the highest priority among those that match (ties: the first name, as a stable choice). */
export function matchPolicy(options: {
  policies: SnapshotPolicy[]
  name: string
  target: { kind: 'exchange' } | { kind: 'queue'; type: QueueType }
}): SnapshotPolicy | null {
  let best: SnapshotPolicy | null = null
  for (const policy of options.policies) {
    if (!policyFits(policy.applyTo, options.target)) continue
    if (!patternOf(policy.pattern)?.matcher(options.name).find()) continue
    if (!best || policy.priority > best.priority || (policy.priority === best.priority && policy.name < best.name)) best = policy
  }
  return best
}

const asSetting = (value: unknown): SettingValue =>
  typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : value === null || value === undefined ? null : JSON.stringify(value)

/** Resolves one key from its candidates by the broker's precedence. */
export function resolveSetting(key: string, candidates: Candidate[]): EffectiveSettingDto | null {
  const present = candidates.filter((c) => c.value !== null)
  if (present.length === 0) return null
  let winner: Candidate
  if (LOWER_WINS_KEYS.has(key) && present.every((c) => typeof c.value === 'number')) {
    winner = present.reduce((low, c) => ((c.value as number) < (low.value as number) ? c : low))
  } else {
    const rank: Record<SettingOrigin, number> = { 'operator-policy': 0, argument: 1, policy: 2, default: 3 }
    winner = [...present].sort((a, b) => rank[a.from] - rank[b.from])[0]
  }
  const overridden = present.filter((c) => c !== winner)
  return { key, ...winner, ...(overridden.length > 0 ? { overridden } : {}) }
}

const candidate = (value: unknown, from: SettingOrigin, policy?: string): Candidate => ({ value: asSetting(value), from, ...(policy ? { policy } : {}) })

/** Version facts the defaults depend on (docs/rabbitmq.md#quorum-queues). */
export const majorVersion = (brokerVersion: string) => Number.parseInt(brokerVersion.split('.')[0] ?? '0', 10) || 0

/** Defaults the rules reason about, for keys no argument or policy sets. */
function defaultOf(key: QueueSettingKey, queue: SnapshotQueue, brokerVersion: string): unknown {
  if (key === 'overflow') return 'drop-head'
  if (key === 'dead-letter-strategy' && queue.type === 'quorum') return 'at-most-once'
  // RabbitMQ 4.0 gave quorum queues a delivery limit of 20; 3.x quorum queues have none.
  if (key === 'delivery-limit' && queue.type === 'quorum' && majorVersion(brokerVersion) >= 4) return 20
  return undefined
}

export type QueueSettings = { byKey: Map<string, EffectiveSettingDto>; list: EffectiveSettingDto[]; policy: SnapshotPolicy | null; operatorPolicy: SnapshotPolicy | null }

/** One queue's effective settings, each with its origin and what it overrode. */
export function queueEffectiveSettings(options: { queue: SnapshotQueue; snapshot: Pick<BrokerSnapshot, 'policies' | 'operatorPolicies' | 'brokerVersion'> }): QueueSettings {
  const { queue, snapshot } = options
  const target = { kind: 'queue' as const, type: queue.type }
  const policy = matchPolicy({ policies: snapshot.policies, name: queue.name, target })
  const operatorPolicy = matchPolicy({ policies: snapshot.operatorPolicies, name: queue.name, target })
  const byKey = new Map<string, EffectiveSettingDto>()
  for (const key of QUEUE_SETTING_KEYS) {
    const candidates: Candidate[] = []
    const argument = queue.arguments[`x-${key}`]
    if (argument !== undefined) candidates.push(candidate(argument, 'argument'))
    if (policy && policy.definition[key] !== undefined) candidates.push(candidate(policy.definition[key], 'policy', policy.name))
    if (operatorPolicy && operatorPolicy.definition[key] !== undefined) candidates.push(candidate(operatorPolicy.definition[key], 'operator-policy', operatorPolicy.name))
    if (candidates.length === 0) {
      const fallback = defaultOf(key, queue, snapshot.brokerVersion)
      if (fallback !== undefined) candidates.push(candidate(fallback, 'default'))
    }
    const setting = resolveSetting(key, candidates)
    if (setting) byKey.set(key, setting)
  }
  return { byKey, list: [...byKey.values()], policy, operatorPolicy }
}

/** An exchange's alternate exchange: the `alternate-exchange` argument beats a policy's (docs/topology.md#effective-settings). */
export function exchangeAlternate(options: { exchange: SnapshotExchange; policies: SnapshotPolicy[] }): EffectiveSettingDto | null {
  const { exchange } = options
  const policy = matchPolicy({ policies: options.policies, name: exchange.name, target: { kind: 'exchange' } })
  const candidates: Candidate[] = []
  if (exchange.arguments['alternate-exchange'] !== undefined) candidates.push(candidate(exchange.arguments['alternate-exchange'], 'argument'))
  if (policy && policy.definition['alternate-exchange'] !== undefined) candidates.push(candidate(policy.definition['alternate-exchange'], 'policy', policy.name))
  return resolveSetting('alternate-exchange', candidates)
}

/** The merged definition the broker reports as effective_policy_definition (operator policy merged over the user policy). */
export function mergedPolicyDefinition(settings: Pick<QueueSettings, 'policy' | 'operatorPolicy'>): JsonArguments {
  const merged: JsonArguments = { ...(settings.policy?.definition ?? {}) }
  for (const [key, value] of Object.entries(settings.operatorPolicy?.definition ?? {})) {
    const mine = merged[key]
    merged[key] = LOWER_WINS_KEYS.has(key) && typeof mine === 'number' && typeof value === 'number' ? Math.min(mine, value) : value
  }
  return merged
}
