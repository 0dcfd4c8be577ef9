import 'server-only'
import { z } from 'zod'
import { getJson } from '@/lib/server/platform/broker/management-api'

/*
 * One vhost's definitions and queue statistics, read through the management API (read-only; docs/rabbitmq.md#the-management-api).
 * Plain data, so tests can write answers of brokers that do not run here (4.x) by hand. Every answer is checked
 * with zod: a broker version with other field shapes fails here, loudly, instead of in a rule.
 */

export type QueueType = 'classic' | 'quorum' | 'stream'
export type JsonArguments = Record<string, unknown>

export type SnapshotQueue = {
  name: string
  type: QueueType
  durable: boolean
  autoDelete: boolean
  exclusive: boolean
  arguments: JsonArguments
  /** The user policy the broker applied, by name (null: none). */
  policy: string | null
  operatorPolicy: string | null
  /** The broker's merged policy definition (null when the broker did not say). Checked against our own match. */
  effectivePolicyDefinition: JsonArguments | null
  messages: number
  consumers: number
  /** Messages per second over the last sample window; null when the broker has no sample yet. */
  rates: { publish: number | null; deliverGet: number | null; redeliver: number | null; ack: number | null }
}

export type SnapshotExchange = { name: string; type: string; durable: boolean; autoDelete: boolean; internal: boolean; arguments: JsonArguments }

export type SnapshotBinding = { source: string; destination: string; destinationType: 'queue' | 'exchange'; routingKey: string; arguments: JsonArguments }

export type PolicyApplyTo = 'all' | 'queues' | 'exchanges' | 'classic_queues' | 'quorum_queues' | 'streams'
export type SnapshotPolicy = { name: string; pattern: string; applyTo: PolicyApplyTo; priority: number; definition: JsonArguments }

export type BrokerSnapshot = {
  vhost: string
  /** `rabbitmq_version` of GET /api/overview, e.g. `3.10.8`. */
  brokerVersion: string
  queues: SnapshotQueue[]
  exchanges: SnapshotExchange[]
  /** Every binding of the vhost, exchange → queue and exchange → exchange; the default exchange's implicit ones left out. */
  bindings: SnapshotBinding[]
  policies: SnapshotPolicy[]
  operatorPolicies: SnapshotPolicy[]
}

const PAGE_SIZE = 500
const args = z.record(z.string(), z.unknown())
const rate = z.object({ rate: z.number() }).optional()

const queueAnswer = z.object({
  name: z.string(),
  type: z.enum(['classic', 'quorum', 'stream']).catch('classic'),
  durable: z.boolean().default(true),
  auto_delete: z.boolean().default(false),
  exclusive: z.boolean().default(false),
  arguments: args.default({}),
  policy: z.string().nullish(),
  operator_policy: z.string().nullish(),
  // 3.10 answers `[]` for "none" where 4.x answers `{}`.
  effective_policy_definition: z.union([args, z.array(z.unknown()).transform(() => ({}))]).nullish(),
  messages: z.number().nullish(),
  consumers: z.number().nullish(),
  message_stats: z
    .object({ publish_details: rate, deliver_get_details: rate, redeliver_details: rate, ack_details: rate })
    .nullish(),
})

const exchangeAnswer = z.object({
  name: z.string(),
  type: z.string(),
  durable: z.boolean().default(true),
  auto_delete: z.boolean().default(false),
  internal: z.boolean().default(false),
  arguments: args.default({}),
})

const bindingAnswer = z.object({
  source: z.string(),
  destination: z.string(),
  destination_type: z.enum(['queue', 'exchange']),
  routing_key: z.string(),
  arguments: args.default({}),
})

const policyAnswer = z.object({
  name: z.string(),
  pattern: z.string(),
  'apply-to': z.enum(['all', 'queues', 'exchanges', 'classic_queues', 'quorum_queues', 'streams']).default('all'),
  priority: z.number().default(0),
  definition: args,
})

const page = z.object({ items: z.array(z.unknown()), page_count: z.number() })

const QUEUE_COLUMNS = [
  'name', 'type', 'durable', 'auto_delete', 'exclusive', 'arguments', 'policy', 'operator_policy', 'effective_policy_definition',
  'messages', 'consumers', 'message_stats.publish_details.rate', 'message_stats.deliver_get_details.rate',
  'message_stats.redeliver_details.rate', 'message_stats.ack_details.rate',
].join(',')

/** Since 3.13 GET /api/queues answers a reduced field set; /api/queues/detailed has everything (docs/rabbitmq.md#the-management-api). */
export function queuesListPath(brokerVersion: string): string {
  const [major = 0, minor = 0] = brokerVersion.split('.').map((part) => Number.parseInt(part, 10))
  return major > 3 || (major === 3 && minor >= 13) ? '/api/queues/detailed' : '/api/queues'
}

async function readPaged(path: string, timeoutMs: number): Promise<unknown[]> {
  const out: unknown[] = []
  for (let number = 1; ; number++) {
    const separator = path.includes('?') ? '&' : '?'
    const answer = page.parse(await getJson(`${path}${separator}page=${number}&page_size=${PAGE_SIZE}`, timeoutMs))
    out.push(...answer.items)
    if (number >= answer.page_count) return out
  }
}

/** The management API's answers, as read (list endpoints' pages joined into one array). */
export type ManagementAnswers = {
  overview: unknown
  queues: unknown[]
  exchanges: unknown[]
  bindings: unknown
  policies: unknown
  operatorPolicies: unknown
}

const toPolicy = (p: z.infer<typeof policyAnswer>): SnapshotPolicy => ({ name: p.name, pattern: p.pattern, applyTo: p['apply-to'], priority: p.priority, definition: p.definition })

/** Checks the answers with zod and turns them into a snapshot (pure: tests feed it answers written by hand). */
export function parseSnapshot(vhost: string, answers: ManagementAnswers): BrokerSnapshot {
  const overview = z.object({ rabbitmq_version: z.string() }).parse(answers.overview)
  return {
    vhost,
    brokerVersion: overview.rabbitmq_version,
    queues: z.array(queueAnswer).parse(answers.queues).map((q) => ({
      name: q.name,
      type: q.type,
      durable: q.durable,
      autoDelete: q.auto_delete,
      exclusive: q.exclusive,
      arguments: q.arguments,
      policy: q.policy || null,
      operatorPolicy: q.operator_policy || null,
      effectivePolicyDefinition: q.effective_policy_definition ?? null,
      messages: q.messages ?? 0,
      consumers: q.consumers ?? 0,
      rates: {
        publish: q.message_stats?.publish_details?.rate ?? null,
        deliverGet: q.message_stats?.deliver_get_details?.rate ?? null,
        redeliver: q.message_stats?.redeliver_details?.rate ?? null,
        ack: q.message_stats?.ack_details?.rate ?? null,
      },
    })),
    exchanges: z
      .array(exchangeAnswer)
      .parse(answers.exchanges)
      .map((x) => ({ name: x.name, type: x.type, durable: x.durable, autoDelete: x.auto_delete, internal: x.internal, arguments: x.arguments })),
    // The default exchange's bindings are implicit (one per queue, keyed by its name); routing.ts knows them.
    bindings: z
      .array(bindingAnswer)
      .parse(answers.bindings)
      .filter((b) => b.source !== '')
      .map((b) => ({ source: b.source, destination: b.destination, destinationType: b.destination_type, routingKey: b.routing_key, arguments: b.arguments })),
    policies: z.array(policyAnswer).parse(answers.policies).map(toPolicy),
    operatorPolicies: z.array(policyAnswer).parse(answers.operatorPolicies).map(toPolicy),
  }
}

/**
 * The management API calls a snapshot takes (read-only), their answers parsed from JSON and nothing else: paths and
 * columns of one vhost's queues, exchanges, bindings, policies and operator policies. `npm run bench:topology`
 * measures it alone as the bare pipeline a run is compared with.
 */
export async function readManagementAnswers(options: { vhost: string; timeoutMs?: number }): Promise<ManagementAnswers> {
  const timeoutMs = options.timeoutMs ?? 10_000
  const vhost = encodeURIComponent(options.vhost)
  const overview = await getJson('/api/overview?columns=rabbitmq_version', timeoutMs)
  const version = z.object({ rabbitmq_version: z.string() }).parse(overview).rabbitmq_version
  const [queues, exchanges, bindings, policies, operatorPolicies] = await Promise.all([
    readPaged(`${queuesListPath(version)}/${vhost}?columns=${QUEUE_COLUMNS}`, timeoutMs),
    readPaged(`/api/exchanges/${vhost}?columns=name,type,durable,auto_delete,internal,arguments`, timeoutMs),
    getJson(`/api/bindings/${vhost}`, timeoutMs),
    getJson(`/api/policies/${vhost}`, timeoutMs),
    getJson(`/api/operator-policies/${vhost}`, timeoutMs),
  ])
  return { overview, queues, exchanges, bindings, policies, operatorPolicies }
}

/** Reads one vhost's queues, exchanges, bindings, policies and operator policies (read-only), checked with zod. */
export async function readBrokerSnapshot(options: { vhost: string; timeoutMs?: number }): Promise<BrokerSnapshot> {
  return parseSnapshot(options.vhost, await readManagementAnswers(options))
}
