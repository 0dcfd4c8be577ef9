import 'server-only'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { isInt8Id } from '@/lib/shared/schemas/fields'

/** Ids are bigint in the database and strings in the API; anything that is not one is simply not found. */
export function parseId(id: string, what: string): bigint {
  // JSON.stringify: the id is whatever the client sent (CR, LF, NUL); the message must not carry it raw.
  if (!isInt8Id(id)) throw notFound(`${what} ${JSON.stringify(id.slice(0, 40))}`)
  return BigInt(id)
}
