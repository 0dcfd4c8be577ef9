import { TEST_ADMIN_TOKEN } from './helpers/auth'

// Read once by lib/server/platform/config.ts: route handlers called by tests accept this provisioning token.
process.env.LAZARUS_ADMIN_TOKEN = TEST_ADMIN_TOKEN
// Per-caller limits are tested on their own (tests/unit/request-limits.test.ts); suites that export or change a lot
// as one caller would otherwise meet them.
process.env.LAZARUS_EXPORTS_PER_MINUTE ??= '10000'
process.env.LAZARUS_CONCURRENT_EXPORTS ??= '100'
process.env.LAZARUS_MUTATIONS_PER_MINUTE ??= '100000'
process.env.LAZARUS_CONCURRENT_REQUESTS ??= '1000'
