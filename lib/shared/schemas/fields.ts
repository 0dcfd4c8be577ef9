import { z } from 'zod'

export const NUL_MESSAGE = 'must not contain NUL characters (\\u0000)'
export const SURROGATE_MESSAGE = 'must be valid Unicode (a lone surrogate such as \\ud800 is not)'

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * Every string the API takes in, in a body or a query. PostgreSQL's text and jsonb cannot hold U+0000, and jsonb
 * refuses a lone surrogate (JSON.stringify writes it as an escape, `"\ud800"`); either would fail in SQL (a 500, or a
 * download aborted half-way). Refused here, it is a 400 naming the field. Chain as usual: `text().trim().min(1)`.
 */
export const text = () =>
  z
    .string()
    .refine((value) => !value.includes('\u0000'), NUL_MESSAGE)
    .refine((value) => !LONE_SURROGATE.test(value), SURROGATE_MESSAGE)

export const INT8_MAX = '9223372036854775807'

/** A positive PostgreSQL bigint in decimal, no sign or leading zeros; 19-digit values above int8's range are not ids. */
export function isInt8Id(value: string): boolean {
  return /^[1-9][0-9]{0,18}$/.test(value) && (value.length < INT8_MAX.length || value <= INT8_MAX)
}

/** A row id as the API spells it: a decimal string (ids are bigint, beyond what a JSON number holds exactly). */
export const idSchema = z.string().refine(isInt8Id, 'must be a numeric id')

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):?(\d{2}))?)?$/

/**
 * The Date an ISO 8601 date or date-time ("2026-11-30", "2026-11-30T10:00:00Z", "2026-11-30T10:00:00.123456+01:00")
 * means, or null for anything else. JavaScript rolls impossible dates over (2026-02-30 is 2 March) and takes year 0,
 * which PostgreSQL refuses; past 9999 (an offset can get there) toISOString() writes a six-digit year PostgreSQL cannot
 * read. So each field is checked here and the instant must fall in years 1 to 9999 UTC: a date from here can be sent to
 * PostgreSQL, and so can its toISOString() (a replay's selection is stored as JSON, and clients send it back).
 */
export function parseIsoDate(value: string): Date | null {
  const m = ISO_DATE.exec(value)
  if (!m) return null
  const [year, month, day, hour = 0, minute = 0, second = 0, offsetHours = 0, offsetMinutes = 0] = m.slice(1).map((part) => (part === undefined ? undefined : Number(part)))
  const leap = year! % 4 === 0 && (year! % 100 !== 0 || year! % 400 === 0)
  if (month! < 1 || month! > 12 || day! < 1 || day! > (month === 2 && !leap ? 28 : DAYS_IN_MONTH[month! - 1])) return null
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return null
  const date = new Date(value)
  const utcYear = date.getUTCFullYear()
  return Number.isNaN(date.getTime()) || utcYear < 1 || utcYear > 9999 ? null : date
}

/** An ISO 8601 date or date-time (see parseIsoDate); other strings Date.parse accepts are refused. */
export const isoDateSchema = z
  .string()
  .refine((value) => parseIsoDate(value) !== null, 'must be an ISO 8601 date such as 2026-11-30 or 2026-11-30T10:00:00Z')
  .transform((value) => parseIsoDate(value)!)

/** For `.refine(fromBeforeTo, FROM_BEFORE_TO)` on any query with an optional from/to window. */
export const fromBeforeTo = (value: { from?: Date; to?: Date }) => !value.from || !value.to || value.from < value.to
export const FROM_BEFORE_TO = { message: 'from must be before to', path: ['from'] }
