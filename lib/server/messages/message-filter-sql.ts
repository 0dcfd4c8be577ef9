import 'server-only'
import type { MessageFilter } from '@/lib/shared/schemas/message'

/**
 * The text `q` searches: error type, the first 512 characters of the error message, entity key and the first 512
 * of the body's text view (dead_letter_search_text_v2, prisma/migrations/20261201020000_search_index). The
 * background indexer stores it in dead_letter_search, whose trigram index serves rare terms; rows still in the
 * search backlog are evaluated directly, so a message is findable from the moment it is stored.
 */
export const searchTextSql = (alias: string) =>
  `dead_letter_search_text_v2(${alias}.error_type, ${alias}.error_message, ${alias}.entity_key, ${alias}.body_preview)`

/** Ids of every stored message whose search text matches the ILIKE pattern in parameter `p`. */
export const searchMatchesSql = (p: string) =>
  `SELECT dead_letter_id FROM dead_letter_search WHERE text ILIKE ${p}
   UNION ALL
   SELECT backlog_d.id FROM search_backlog backlog JOIN dead_letters backlog_d ON backlog_d.id BETWEEN backlog.first_id AND backlog.last_id
   WHERE ${searchTextSql('backlog_d')} ILIKE ${p}`

/** The search text of `alias`'s row: indexed when it is, computed when it is not yet (join `searchAlias` LEFT). */
export const rowSearchTextSql = (alias: string, searchAlias: string) => `coalesce(${searchAlias}.text, ${searchTextSql(alias)})`

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
  if (filter.q) add((p) => `${alias}.id IN (${searchMatchesSql(p)})`, searchPattern(filter.q))
  return where.length ? where.join(' AND ') : 'TRUE'
}
