import 'server-only'
import { isConnectionError, isRetryableSqlError } from '@/lib/server/platform/db/sql'
import type { IngestRow } from '@/lib/server/ingest/types'
import { storeBatch, type StoreBatchOptions } from './store-batch'

/**
 * Stores a batch; if PostgreSQL refuses it for its data, stores it row by row so one bad row cannot block the rest,
 * and a single row refused for its content in a degraded but lossless form (docs/ARCHITECTURE.md#draining, "A refused
 * batch"). If even that fails, the error propagates: the caller holds the batch rather than ack something that was
 * not stored. A connection error propagates at once, for the caller's outage handling.
 */
export async function storeBatchOrDegrade(options: StoreBatchOptions): Promise<void> {
  try {
    await storeBatch(options)
  } catch (error) {
    if (isConnectionError(error) || isRetryableSqlError(error)) throw error
    if (options.rows.length > 1) {
      for (const row of options.rows) await storeBatchOrDegrade({ ...options, rows: [row] })
      return
    }
    await storeBatch({ ...options, rows: [degradeRow(options.rows[0], error as Error)] })
  }
}

/** A row PostgreSQL refused for its content, in a form it accepts: the exact body, the headers as raw bytes, flagged. */
export function degradeRow(row: IngestRow, error: Error): IngestRow {
  const rawHeaders = Buffer.from(row.headersJson, 'utf8').toString('base64')
  return {
    ...row,
    // A typed byte array ('x' carries b64), so every reader of typed headers can show it.
    headersJson: JSON.stringify({ 'x-lazarus-unstorable-headers': { t: 'x', b64: rawHeaders } }),
    propertiesJson: row.propertiesJson.includes('\\u') ? '{}' : row.propertiesJson,
    flags: [...row.flags, 'stored-degraded', `store-error: ${error.message}`.slice(0, 200)],
  }
}
