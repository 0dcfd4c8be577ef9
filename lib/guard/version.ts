/**
 * This guard's version, sent with every poll (`guardVersion`) so Lazarus can show which guards run where.
 * Semver: the major changes when the guard and Lazarus stop understanding each other. 2.x: control events only
 * trigger a re-read of the pause list, and the poll names the queue and carries a token. 2.1: the poll also says the
 * registry version the guard holds. 2.2: the `versions` option, and reports of superseded messages
 * (POST /api/guard/superseded).
 */
export const GUARD_VERSION = '2.2.0'
