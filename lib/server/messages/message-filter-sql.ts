import 'server-only'
import type { MessageFilter } from '@/lib/shared/schemas/message'

/** Builds the WHERE clause for the message filters of product.md §8; values always travel as parameters. */
export function messageFilterSql(filter: MessageFilter, params: unknown[], alias = 'd'): string {
  const where: string[] = []
  const add = (sql: (p: string) => string, value: unknown) => {
    params.push(value)
    where.push(sql(`$${params.length}`))
  }
  if (filter.group) add((p) => `${alias}.group_id = ${p}::bigint`, filter.group)
  if (filter.source) add((p) => `${alias}.source_id = ${p}::bigint`, filter.source)
  if (filter.status) add((p) => `${alias}.status = ${p}`, filter.status)
  if (filter.failureKind) add((p) => `${alias}.failure_kind = ${p}`, filter.failureKind)
  if (filter.service) add((p) => `${alias}.service = ${p}`, filter.service)
  if (filter.serviceVersion) add((p) => `${alias}.service_version = ${p}`, filter.serviceVersion)
  if (filter.entity) add((p) => `${alias}.entity_key = ${p}`, filter.entity)
  if (filter.from) add((p) => `${alias}.failed_at >= ${p}::timestamptz`, filter.from)
  if (filter.to) add((p) => `${alias}.failed_at < ${p}::timestamptz`, filter.to)
  if (filter.q) {
    const pattern = `%${filter.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
    add((p) => `(${alias}.error_message ILIKE ${p} OR ${alias}.error_type ILIKE ${p} OR ${alias}.body_preview ILIKE ${p} OR ${alias}.entity_key ILIKE ${p})`, pattern)
  }
  return where.length ? where.join(' AND ') : 'TRUE'
}
