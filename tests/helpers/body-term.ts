import { createHash } from 'node:crypto'

/**
 * A body field's search term as the search index stores it (written out here, not imported, so the tests check the
 * format the migration's SQL writes): `b#` and the first 16 hex digits of md5 over `<pointer length>:<pointer>=<value>`.
 */
export const bodyTerm = (pointer: string, value: string) => `b#${createHash('md5').update(`${pointer.length}:${pointer}=${value}`).digest('hex').slice(0, 16)}`
