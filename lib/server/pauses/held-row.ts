import 'server-only'

/*
 * What holding means for a stored message: the group every held message joins, and which pause explains a held row.
 * How a delivery of lazarus.hold becomes a held row is ingestion's (lib/server/ingest/held-delivery.ts).
 */

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
export function pauseOpenNear(at: { vhost: string; queue: string; entityKey: string; heldAt: string }): string {
  return `EXISTS (SELECT 1 FROM pauses w WHERE w.vhost = ${at.vhost} AND w.queue = ${at.queue}
    AND (w.entity_key IS NULL OR w.entity_key = ${at.entityKey})
    AND w.created_at <= ${at.heldAt} + ${HELD_PAUSE_WINDOW} AND (w.resumed_at IS NULL OR w.resumed_at >= ${at.heldAt} - ${HELD_PAUSE_WINDOW}))`
}

/**
 * The `flags` value of a held row in the drainer's INSERT (param names a column's parameter): the row's own flags,
 * plus HELD_UNEXPECTED_FLAG when no pause explains it. Decided as the row is written, against the pauses committed
 * by then, so the row is written once, and a pause created later cannot turn a forged hold into a releasable one.
 * A row without held_from is flagged held-without-origin instead (asHeldRow, lib/server/ingest/held-delivery.ts) and is never released either.
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
