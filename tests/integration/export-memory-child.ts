/**
 * Child process of export-memory.test.ts: streams GET /api/export through the route handler into nothing, the way
 * the server hands a download to a client, and reports what it saw and its own peak memory. Run apart from the
 * test runner so the measured RSS is the export's, not vitest's.
 */
import * as exportRoute from '@/app/api/export/route'
import { ADMIN_AUTH } from '../helpers/auth'
import { openDb } from '@/lib/server/platform/db'
import { composition } from '@/lib/server/platform/process/composition'

const [url, query] = process.argv.slice(2)
const db = await openDb({ databaseUrl: url, migrate: false })
composition().setDb(db)
const started = performance.now()
const response = await exportRoute.GET(new Request(`http://lazarus.test/api/export?${query}`, { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })
const reader = response.body!.getReader()
let bytes = 0
let lines = 0
for (;;) {
  const { done, value } = await reader.read()
  if (done) break
  bytes += value.length
  for (let i = value.indexOf(10); i >= 0; i = value.indexOf(10, i + 1)) lines++
}
const seconds = (performance.now() - started) / 1000
await db.close()
process.stdout.write(`${JSON.stringify({ status: response.status, lines, bytes, seconds, peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024) })}\n`)
