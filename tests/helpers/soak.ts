/**
 * `npm run test:soak` runs the high-volume files at production-like sizes (LAZARUS_SOAK=1); `npm test` runs the same
 * files at sizes that still prove the property (every message exactly once across kills, memory that does not grow
 * with the rows), in a fraction of the time.
 */
export const SOAK = process.env.LAZARUS_SOAK === '1'

/** `small` in `npm test`, `large` in `npm run test:soak`. */
export const bySize = <T>(small: T, large: T): T => (SOAK ? large : small)
