import 'server-only'
import type { MessageFilter } from '@/lib/shared/schemas/message'

/**
 * The text `q` searches: error type, the first 256 characters of the error message, entity key and the first 128
 * of the body's text view, exactly as the trigram index dead_letters_search_trgm_idx is built
 * (prisma/migrations/20261130020000_triage): any other expression would not use the index.
 */
export const searchTextSql = (alias: string) =>
  `dead_letter_search_text(${alias}.error_type, ${alias}.error_message, ${alias}.entity_key, ${alias}.body_preview)`

/** The ILIKE pattern for `q`: the term anywhere, with its own %, _ and backslash taken literally. */
export const searchPattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

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
  // Spelled out so the planner can use the partial index dead_letters_status_idx (WHERE status <> 'dead').
  if (filter.status && filter.status !== 'dead') where.push(`${alias}.status <> 'dead'`)
  if (filter.failureKind) add((p) => `${alias}.failure_kind = ${p}`, filter.failureKind)
  if (filter.service) add((p) => `${alias}.service = ${p}`, filter.service)
  if (filter.serviceVersion) add((p) => `${alias}.service_version = ${p}`, filter.serviceVersion)
  if (filter.entity) add((p) => `${alias}.entity_key = ${p}`, filter.entity)
  if (filter.from) add((p) => `${alias}.failed_at >= ${p}::timestamptz`, filter.from)
  if (filter.to) add((p) => `${alias}.failed_at < ${p}::timestamptz`, filter.to)
  if (filter.q) add((p) => `${searchTextSql(alias)} ILIKE ${p}`, searchPattern(filter.q))
  return where.length ? where.join(' AND ') : 'TRUE'
}
