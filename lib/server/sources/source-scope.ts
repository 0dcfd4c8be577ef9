import 'server-only'

/**
 * The sources a caller may see. A role binding limited to a queue pattern resolves to the ids of the matching sources;
 * absent or null means every source (and the unrestricted SQL, unchanged); an empty list means none, so nothing
 * is visible. Read functions take it on their options object: `listGroups({ db, query, sourceIds })`.
 */
export type SourceScope = { sourceIds?: readonly string[] | null }

const ID = /^[1-9][0-9]{0,18}$/

/**
 * The allowed source ids as a query parameter, or null when unrestricted. A malformed id is a programming error
 * (ids come from the sources table, not from the request): refused rather than cast by PostgreSQL mid-query.
 */
export function allowedSourceIds(scope: SourceScope | undefined): string[] | null {
  const ids = scope?.sourceIds
  if (ids === undefined || ids === null) return null
  for (const id of ids) if (typeof id !== 'string' || !ID.test(id)) throw new Error(`source scope: ${JSON.stringify(id)} is not a source id`)
  return [...ids]
}
