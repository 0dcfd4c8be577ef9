import 'server-only'
import type { TypedTable, TypedValue } from '@/lib/server/platform/broker/typed-fields'
import type { IngestRow } from '@/lib/server/engines/drainer/store-batch'
import { HELD_ENTITY_HEADER, HELD_FROM_HEADER, HELD_HEADER_PREFIX } from '@/lib/guard/protocol'

/** Every held message joins this one error group, which the groups list hides unless asked (includeHeld). */
export const HELD_SIGNATURE = 'lazarus:held'
export const HELD_TITLE = 'Held while paused'

/**
 * A held message that no pause explains: no pause of the queue it names (x-lazarus-held-from), covering its entity, was
 * open within HELD_PAUSE_WINDOW of its arrival. Any client allowed to publish to lazarus.hold can write that header,
 * and a release publishes with Lazarus' own credentials, so such a message is never released automatically: it is
 * stored (nothing is dropped), stays held, and waits for an operator.
 */
export const HELD_UNEXPECTED_FLAG = 'held-unexpected'
/**
 * How far from a message's arrival a pause of its queue must have been open. A guard holds only while it knows a
 * pause, and hears of a resume within seconds (a poll at worst); the margin covers a slow poll, clocks that differ
 * between the worker and PostgreSQL, and a drainer that kept deliveries in memory through a short database outage.
 */
export const HELD_PAUSE_WINDOW = `interval '10 minutes'`

/**
 * SQL: a pause of `queue` in `vhost` covering `entityKey` (a whole-queue pause covers any) was open at some moment
 * within HELD_PAUSE_WINDOW of `heldAt`. Arguments are SQL expressions. Served by pauses_vhost_queue_idx.
 */
export function pauseOpenNear(sql: { vhost: string; queue: string; entityKey: string; heldAt: string }): string {
  return `EXISTS (SELECT 1 FROM pauses w WHERE w.vhost = ${sql.vhost} AND w.queue = ${sql.queue}
    AND (w.entity_key IS NULL OR w.entity_key = ${sql.entityKey})
    AND w.created_at <= ${sql.heldAt} + ${HELD_PAUSE_WINDOW} AND (w.resumed_at IS NULL OR w.resumed_at >= ${sql.heldAt} - ${HELD_PAUSE_WINDOW}))`
}

/**
 * The `flags` value of a held row in the drainer's INSERT (param names a column's parameter): the row's own flags,
 * plus HELD_UNEXPECTED_FLAG when no pause explains it. Decided as the row is written, against the pauses committed
 * by then, so the row is written once, and a pause created later cannot turn a forged hold into a releasable one.
 * A row without held_from is flagged held-without-origin instead (asHeldRow) and is never released either.
 */
export function heldFlagsSql(param: (column: 'source_id' | 'held_from' | 'entity_key' | 'failed_at' | 'flags') => string): string {
  const explained = pauseOpenNear({
    vhost: `(SELECT hs.vhost FROM sources hs WHERE hs.id = ${param('source_id')}::bigint)`,
    queue: `${param('held_from')}::text`,
    entityKey: `${param('entity_key')}::text`,
    heldAt: `${param('failed_at')}::timestamptz`,
  })
  return `CASE WHEN ${param('held_from')}::text IS NULL OR ${explained} THEN ${param('flags')}::text[]
    ELSE array_append(${param('flags')}::text[], '${HELD_UNEXPECTED_FLAG}') END`
}

/** RabbitMQ queue names are at most 255 bytes; entity keys are capped like the normaliser's. */
const MAX_QUEUE_CHARS = 255
const MAX_ENTITY_CHARS = 1024

function headerText(value: TypedValue | undefined, cap: number): string | null {
  if (!value) return null
  let text: string | null = null
  if (value.t === 'S') text = 'v' in value ? value.v : Buffer.from(value.b64, 'base64').toString('utf8')
  else if (value.t === 'x') text = Buffer.from(value.b64, 'base64').toString('utf8')
  if (text === null || text === '' || text.length > cap || text.includes('\u0000')) return null
  return text
}

/**
 * A delivery from a hold source: not a failure but a message a guard parked while its entity was paused. It is
 * stored with status 'held', the queue it came from, and the entity the guard matched, in the fixed held group.
 * The guard's x-lazarus-held-* headers move into those columns: the stored headers are the application's own, so
 * a release re-publishes the message as it was. (The fingerprint, computed before, still includes the per-hold id,
 * so two identical messages held twice are two rows.)
 */
export function asHeldRow(row: IngestRow, headers: TypedTable, now: Date): IngestRow {
  const heldFrom = headerText(headers[HELD_FROM_HEADER], MAX_QUEUE_CHARS)
  const entityKey = headerText(headers[HELD_ENTITY_HEADER], MAX_ENTITY_CHARS) ?? row.entityKey
  const stored = JSON.parse(row.headersJson) as Record<string, unknown>
  for (const key of Object.keys(stored)) if (key.startsWith(HELD_HEADER_PREFIX)) delete stored[key]
  return {
    ...row,
    headersJson: JSON.stringify(stored),
    status: 'held',
    heldFrom,
    entityKey,
    signature: HELD_SIGNATURE,
    title: HELD_TITLE,
    messagePattern: null,
    errorType: null,
    errorMessage: null,
    errorStack: null,
    failureKind: 'unknown',
    failedAt: now,
    // Without the header Lazarus cannot tell where the message belongs; it stays held until an operator acts.
    flags: heldFrom === null ? [...row.flags, 'held-without-origin'] : row.flags,
  }
}
