import 'server-only'
import type { RedactionRule } from './redactor'

/**
 * The rules migrations 20261201030000_redaction and 20261205030000_redaction_defaults seed, in their order (tests
 * check that the two agree). Editing them here changes nothing in a database: the settings page edits the stored set.
 */
export const DEFAULT_REDACTION_RULES: readonly RedactionRule[] = [
  ...['*password*', '*passwd*', 'pwd', '*secret*', '*token*', '*apikey*', '*accesskey*', '*privatekey*', '*credential*', 'authorization', 'proxy-authorization', '*cookie*', '*cardnumber*', 'cvv', 'cvc', 'ssn'].map(
    (value): RedactionRule => ({ kind: 'key', value, enabled: true }),
  ),
  ...['email', 'card-number', 'jwt', 'bearer-token', 'url-password', 'private-key'].map((value): RedactionRule => ({ kind: 'detector', value, enabled: true })),
  // Migration 20261205030000_redaction_defaults appends these (existing rule sets get them too).
  ...['*passphrase*', '*passcode*', 'pass', 'pw', 'pin', '*pincode*', 'session', '*sessionid*', '*sessionkey*', '*privkey*'].map(
    (value): RedactionRule => ({ kind: 'key', value, enabled: true }),
  ),
  { kind: 'detector', value: 'service-token', enabled: true },
]
