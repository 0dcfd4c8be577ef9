/** GET /api/settings/retention: the retention period, the store's size and what retention removes next. */
export type RetentionStatusDto = {
  retentionDays: number
  /** On-disk size (heap, TOAST and indexes) of what Lazarus stores. */
  store: { totalBytes: number; tables: { name: string; bytes: number; rows: number }[] }
  /** Replayed and resolved messages past the cutoff now (counted up to `cap`). */
  eligibleNow: number
  /** ...and those that will be within the next 24 hours. */
  eligibleWithin24h: number
  cap: number
  cutoff: string | null
  lastRun: { startedAt: string; finishedAt: string | null; deleted: number; error: string | null } | null
}
