import 'server-only'
import { z } from 'zod'
import { getJson, isManagementNotFound } from '@/lib/server/platform/broker/management-api'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { PlanDifference, PlanItemDto, TopologyPlanDto } from '@/lib/shared/topology/builder-api'
import { buildThreeTier, type BuilderBinding, type BuilderExchange, type BuilderObject, type BuilderQueue, type ThreeTierSpecInput } from '@/lib/shared/topology/three-tier'

/** RabbitMQ renders an empty table as [] in some places and versions; read both as "no keys". */
const table = z.preprocess((v) => (Array.isArray(v) || v === null || v === undefined ? {} : v), z.record(z.string(), z.unknown()))

const existingQueueSchema = z.object({
  type: z.string().default('classic'),
  durable: z.boolean(),
  auto_delete: z.boolean(),
  exclusive: z.boolean().default(false),
  arguments: table,
})

const existingExchangeSchema = z.object({
  type: z.string(),
  durable: z.boolean(),
  auto_delete: z.boolean(),
  internal: z.boolean(),
  arguments: table,
})

const existingBindingsSchema = z.array(z.object({ routing_key: z.string(), arguments: table }))

export type PlanTopologyApplyOptions = { vhost: string; spec: ThreeTierSpecInput }

const enc = encodeURIComponent

/** The management API's answer for `path`, or null when it says the object does not exist. */
async function getOrNull(path: string): Promise<unknown> {
  try {
    return await getJson(path)
  } catch (error) {
    if (isManagementNotFound(error)) return null
    throw new AppError('unavailable', `Cannot read the broker's topology: the management API is unavailable (${(error as Error).message})`)
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** Every argument either side has that differs, the queue type excepted (compared as the queue's `type`). */
function argumentDifferences(existing: Record<string, unknown>, wanted: Record<string, unknown>): PlanDifference[] {
  const keys = [...new Set([...Object.keys(existing), ...Object.keys(wanted)])].filter((k) => k !== 'x-queue-type').sort()
  return keys.filter((k) => !same(existing[k], wanted[k])).map((k) => ({ field: `arguments.${k}`, existing: existing[k] ?? null, wanted: wanted[k] ?? null }))
}

function fieldDifferences(pairs: [field: string, existing: unknown, wanted: unknown][]): PlanDifference[] {
  return pairs.filter(([, existing, wanted]) => !same(existing, wanted)).map(([field, existing, wanted]) => ({ field, existing, wanted }))
}

const item = (object: BuilderObject, differences: PlanDifference[] | null): PlanItemDto => ({
  object,
  action: differences === null ? 'create' : differences.length ? 'conflict' : 'unchanged',
  differences: differences ?? [],
})

/** A queue or exchange: `create` when the management API does not know it, else each setting that differs. */
async function planDeclared<T extends { arguments: Record<string, unknown> }>(
  path: string,
  schema: z.ZodType<T>,
  object: BuilderQueue | BuilderExchange,
  fields: (existing: T) => [field: string, existing: unknown, wanted: unknown][],
): Promise<PlanItemDto> {
  const raw = await getOrNull(path)
  if (raw === null) return item(object, null)
  const existing = schema.parse(raw)
  return item(object, [...fieldDifferences(fields(existing)), ...argumentDifferences(existing.arguments, object.arguments)])
}

const planQueue = (vhost: string, q: BuilderQueue) =>
  planDeclared(`/api/queues/${enc(vhost)}/${enc(q.name)}`, existingQueueSchema, q, (e) => [
    ['type', e.type, q.queueType],
    ['durable', e.durable, q.durable],
    ['auto_delete', e.auto_delete, q.autoDelete],
    ['exclusive', e.exclusive, q.exclusive],
  ])

const planExchange = (vhost: string, x: BuilderExchange) =>
  planDeclared(`/api/exchanges/${enc(vhost)}/${enc(x.name)}`, existingExchangeSchema, x, (e) => [
    ['type', e.type, x.exchangeType],
    ['durable', e.durable, x.durable],
    ['auto_delete', e.auto_delete, x.autoDelete],
    ['internal', e.internal, x.internal],
  ])

async function planBinding(vhost: string, b: BuilderBinding): Promise<PlanItemDto> {
  const kind = b.destinationType === 'queue' ? 'q' : 'e'
  const raw = await getOrNull(`/api/bindings/${enc(vhost)}/e/${enc(b.source)}/${kind}/${enc(b.destination)}`)
  const existing = raw === null ? [] : existingBindingsSchema.parse(raw)
  const found = existing.some((e) => e.routing_key === b.routingKey && same(e.arguments, b.arguments))
  return item(b, found ? [] : null)
}

/**
 * The dry run (docs/topology-builder.md#the-dry-run): for every object the builder makes from `spec`, whether the vhost
 * has it already (`unchanged`), has it with other settings (`conflict`, naming each difference) or lacks it
 * (`create`). Read-only: it asks the management API for each object by name. An existing queue or exchange must
 * match exactly, argument for argument, because the broker refuses to redeclare it otherwise; objects the builder
 * does not make are not looked at.
 */
export async function planTopologyApply({ vhost, spec }: PlanTopologyApplyOptions): Promise<TopologyPlanDto> {
  if ((await getOrNull(`/api/vhosts/${enc(vhost)}`)) === null) throw new AppError('not_found', `vhost "${vhost}" does not exist`)
  const brokerVersion = z.object({ rabbitmq_version: z.string() }).parse(await getJson('/api/overview?columns=rabbitmq_version')).rabbitmq_version
  const { objects } = buildThreeTier(spec, { vhost, brokerVersion })
  const items = await Promise.all(
    objects.map((o) => (o.kind === 'queue' ? planQueue(vhost, o) : o.kind === 'exchange' ? planExchange(vhost, o) : planBinding(vhost, o))),
  )
  const counts = { create: 0, unchanged: 0, conflict: 0 }
  for (const i of items) counts[i.action]++
  return { vhost, brokerVersion, items, counts, canApply: counts.conflict === 0 }
}
