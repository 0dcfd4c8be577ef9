import 'server-only'
import { notFound } from '@/lib/server/errors/app-error'

/** Ids are bigint in the database and strings in the API; anything that is not one is simply not found. */
export function parseId(id: string, what: string): bigint {
  if (!/^[1-9][0-9]{0,18}$/.test(id)) throw notFound(`${what} ${JSON.stringify(id.slice(0, 40))}`)
  const value = BigInt(id)
  if (value > 9_223_372_036_854_775_807n) throw notFound(`${what} ${id}`)
  return value
}
