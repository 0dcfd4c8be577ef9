import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { loadRedactor } from '@/lib/server/redaction/redaction-rules'
import type { RedactedView } from './redacted-search'

/** The redacted view for a caller with raw access to `rawSourceIds` only; none when they see every source raw. */
export async function redactedViewFor({ db, rawSourceIds }: { db: Db; rawSourceIds: string[] | null }): Promise<RedactedView | undefined> {
  if (rawSourceIds === null) return undefined
  return { rawSourceIds, redactor: await loadRedactor({ sql: db.sql }) }
}
