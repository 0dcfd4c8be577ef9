import 'server-only'

/**
 * A replay item's status as shown, for `replay_items i` joined to its `replay_jobs j`: the executor writes no
 * in_flight status per item (it raises the job's claimed_through before publishing a chunk), so a pending item at or
 * below that mark is in flight: it may have reached the broker and has no outcome yet.
 */
export const ITEM_STATUS_SQL = `CASE WHEN i.status = 'pending' AND i.seq <= j.claimed_through THEN 'in_flight' ELSE i.status END`
