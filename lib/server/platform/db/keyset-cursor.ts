import 'server-only'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { isInt8Id, parseIsoDate } from '@/lib/shared/schemas/fields'

export type Cursor = { failedAt: string; id: string }

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(`${cursor.failedAt}|${cursor.id}`, 'utf8').toString('base64url')
}

/** What every keyset cursor's timestamp looks like when Lazarus wrote it: UTC, milliseconds (toISOString) or microseconds. */
const CURSOR_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/

/**
 * A `<instant>|<id>` keyset cursor (base64url) as the lists write them, or a 400. Cursors come back from clients, so
 * both halves go to SQL only once they are exactly what a list would have written: Date.parse alone lets through
 * `1` (2001 to V8), 2026-02-30 and year 0, which PostgreSQL refuses, and ids beyond bigint fail there too.
 */
export function decodeKeysetCursor(raw: string): { at: string; id: string } {
  const parts = Buffer.from(raw, 'base64url').toString('utf8').split('|')
  const [at, id] = parts
  if (parts.length !== 2 || !CURSOR_INSTANT.test(at) || parseIsoDate(at) === null || !isInt8Id(id)) {
    throw new AppError('invalid', 'cursor is not valid; use the nextCursor value of a previous page')
  }
  return { at, id }
}

export function decodeCursor(raw: string): Cursor {
  const { at, id } = decodeKeysetCursor(raw)
  return { failedAt: at, id }
}
