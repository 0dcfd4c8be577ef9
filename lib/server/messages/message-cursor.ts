import 'server-only'
import { AppError } from '@/lib/server/errors/app-error'

export type Cursor = { failedAt: string; id: string }

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(`${cursor.failedAt}|${cursor.id}`, 'utf8').toString('base64url')
}

export function decodeCursor(raw: string): Cursor {
  const [failedAt, id] = Buffer.from(raw, 'base64url').toString('utf8').split('|')
  if (!failedAt || !id || Number.isNaN(Date.parse(failedAt)) || !/^[0-9]{1,19}$/.test(id)) {
    throw new AppError('invalid', 'cursor is not valid; use the nextCursor value of a previous page')
  }
  return { failedAt, id }
}
