import { version } from '../package.json'

/**
 * This guard's version, sent with every poll (`guardVersion`) so Lazarus can show which guards run where: the
 * package's own version, written once in its package.json (the build inlines it; docs/ARCHITECTURE.md#pause-hold-release,
 * "The guard package"). Semver: the major changes when the guard and Lazarus stop understanding each other, a minor when
 * the guard sends something new. What each version changed is in the package's CHANGELOG.md.
 */
export const GUARD_VERSION: string = version
