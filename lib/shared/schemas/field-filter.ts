import { z } from 'zod'
import { pointerProblem } from '@/lib/shared/json-pointer'
import { text } from './fields'

/*
 * Filters on a message's application headers, AMQP properties, JSON body fields and x-death entries (README, "Filtering
 * by header, property, body field or x-death"). The URL and the API spell each as one query parameter:
 *
 *   h.tenant=acme          header `tenant` is acme        p.correlationId=abc   property equals
 *   h.tenant^=ac           header `tenant` starts with ac p.type^=order.        property starts with
 *   h.tenant?=true|false   header `tenant` is present or absent (also p.…?= and b.…?=)
 *   b./order/customer=42   the JSON body's field at that RFC 6901 pointer is 42 (b./type^=refund.: starts with)
 *   death.count>=5         an x-death entry counted at least 5 times (death.count<=5: at most)
 *   death.reason=expired   an x-death entry with that reason; death.queue=orders: with that queue
 *
 * (`^`, `?`, `>` and `<` end the parameter's name: `h.tenant^=ac` is the name `h.tenant^` with the value `ac`.)
 * The server lifts them into the filter's `match` list (liftFieldFilters); the browser keeps them as parameters.
 */

/**
 * AMQP properties, then a JetStream failure's facts (docs/jetstream.md#what-is-stored). The JetStream ones are not in
 * the search index's terms (INDEXED_PROPERTIES): they are matched row by row, so combine them with the source.
 */
export const FILTER_PROPERTIES = ['messageId', 'correlationId', 'type', 'appId', 'userId', 'subject', 'stream', 'consumer'] as const

/** At most this many field conditions in one filter. */
export const MAX_FIELD_FILTERS = 20

const value = text().min(1, 'needs a value').max(1024)
/** A body field's RFC 6901 pointer (lib/shared/json-pointer.ts). */
const pointer = text().superRefine((name, ctx) => {
  const problem = pointerProblem(name)
  if (problem) ctx.addIssue({ code: 'custom', message: problem })
})
const count = z.string().regex(/^[0-9]{1,9}$/, 'must be a whole number')

export const fieldConditionSchema = z.union([
  z.object({ on: z.literal('header'), name: text().min(1).max(255), op: z.enum(['eq', 'prefix']), value }).strict(),
  z.object({ on: z.literal('header'), name: text().min(1).max(255), op: z.enum(['exists', 'missing']) }).strict(),
  z.object({ on: z.literal('property'), name: z.enum(FILTER_PROPERTIES), op: z.enum(['eq', 'prefix']), value }).strict(),
  z.object({ on: z.literal('property'), name: z.enum(FILTER_PROPERTIES), op: z.enum(['exists', 'missing']) }).strict(),
  z.object({ on: z.literal('body'), name: pointer, op: z.enum(['eq', 'prefix']), value }).strict(),
  z.object({ on: z.literal('body'), name: pointer, op: z.enum(['exists', 'missing']) }).strict(),
  z.object({ on: z.literal('death'), name: z.literal('count'), op: z.enum(['gte', 'lte']), value: count }).strict(),
  z.object({ on: z.literal('death'), name: z.enum(['reason', 'queue']), op: z.literal('eq'), value }).strict(),
])
export type FieldCondition = z.infer<typeof fieldConditionSchema>

export const fieldConditionsSchema = z.array(fieldConditionSchema).max(MAX_FIELD_FILTERS, `at most ${MAX_FIELD_FILTERS} header, property, body field and x-death filters`)

const SCOPES = { h: 'header', p: 'property', b: 'body', death: 'death' } as const
const SCOPE_PREFIX = { header: 'h', property: 'p', body: 'b', death: 'death' } as const
const SUFFIX_OPS = { '^': 'prefix', '>': 'gte', '<': 'lte' } as const

/** Whether a query parameter's name is a field filter (`h.…`, `p.…`, `b.…`, `death.…`). */
export const isFieldFilterParam = (name: string) => /^(h|p|b|death)\../.test(name)

/**
 * A field filter parameter as a condition, for the schema to check (an unknown property or a bad value fails there,
 * naming it); null when `name` is not a field filter parameter.
 */
export function parseFieldFilter(name: string, raw: string): Record<string, unknown> | null {
  if (!isFieldFilterParam(name)) return null
  const dot = name.indexOf('.')
  const on = SCOPES[name.slice(0, dot) as keyof typeof SCOPES]
  let field = name.slice(dot + 1)
  const last = field.slice(-1)
  if (last === '?') {
    field = field.slice(0, -1)
    const op = raw === 'true' ? 'exists' : raw === 'false' ? 'missing' : `${field}? takes true or false`
    return { on, name: field, op }
  }
  if (last in SUFFIX_OPS && field.length > 1) return { on, name: field.slice(0, -1), op: SUFFIX_OPS[last as keyof typeof SUFFIX_OPS], value: raw }
  return { on, name: field, op: 'eq', value: raw }
}

/** A condition as its query parameter: the inverse of parseFieldFilter. */
export function fieldFilterParam(condition: FieldCondition): [name: string, value: string] {
  const key = `${SCOPE_PREFIX[condition.on]}.${condition.name}`
  switch (condition.op) {
    case 'eq':
      return [key, condition.value]
    case 'prefix':
      return [`${key}^`, condition.value]
    case 'gte':
      return [`${key}>`, condition.value]
    case 'lte':
      return [`${key}<`, condition.value]
    case 'exists':
      return [`${key}?`, 'true']
    case 'missing':
      return [`${key}?`, 'false']
  }
}

/** A condition as people read it: `h.tenant = acme`, `death.count ≥ 5`, `p.type starts with order.`. */
export function describeFieldFilter(condition: FieldCondition): string {
  const key = `${SCOPE_PREFIX[condition.on]}.${condition.name}`
  switch (condition.op) {
    case 'eq':
      return `${key} = ${condition.value}`
    case 'prefix':
      return `${key} starts with ${condition.value}`
    case 'gte':
      return `${key} ≥ ${condition.value}`
    case 'lte':
      return `${key} ≤ ${condition.value}`
    case 'exists':
      return `${key} exists`
    case 'missing':
      return `${key} does not exist`
  }
}

/**
 * The raw filter with its field filter parameters moved into `match` (after any conditions already there), for the
 * schema to check: what lets a query string and a JSON selection alike say `h.tenant=acme`.
 */
export function liftFieldFilters(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw
  const rest: Record<string, unknown> = {}
  const lifted: unknown[] = []
  for (const [name, value] of Object.entries(raw)) {
    const condition = isFieldFilterParam(name) ? parseFieldFilter(name, typeof value === 'string' ? value : String(value)) : null
    if (condition) lifted.push(condition)
    else rest[name] = value
  }
  if (lifted.length === 0 || (rest.match !== undefined && !Array.isArray(rest.match))) return raw
  const before = Array.isArray(rest.match) ? rest.match : []
  return { ...rest, match: [...before, ...lifted] }
}

/** `schema` taking field filters as parameters too (liftFieldFilters). */
export const withFieldFilters = <T extends z.ZodType>(schema: T) => z.preprocess(liftFieldFilters, schema)

/** Whether a condition compares a value (all but exists and missing): those a masked value must not answer. */
export const comparesValue = (condition: FieldCondition) => condition.op !== 'exists' && condition.op !== 'missing'
