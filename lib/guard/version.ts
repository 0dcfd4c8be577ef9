/**
 * This guard's version, sent with every poll (`guardVersion`) so Lazarus can show which guards run where.
 * Semver: the major changes when the guard and Lazarus stop understanding each other. 2.x: control events only
 * trigger a re-read of the pause list, and the poll names the queue and carries a token.
 */
export const GUARD_VERSION = '2.0.0'
