import { TEST_ADMIN_TOKEN } from './helpers/auth'

// Read once by lib/server/config.ts: route handlers called by tests accept this provisioning token.
process.env.LAZARUS_ADMIN_TOKEN = TEST_ADMIN_TOKEN
