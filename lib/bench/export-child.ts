/**
 * Child process of `npm run bench:export`: streams GET /api/export through the route handler into nothing (as the
 * server hands a download to a client) and prints one JSON line with what it saw and its own peak memory, so the
 * figure is the export's alone. Arguments: database URL, the export's query string; BENCH_TOKEN: the caller's API token.
 */
import * as exportRoute from '@/app/api/export/route'
import { openDb } from '@/lib/server/platform/db'
import { composition } from '@/lib/server/platform/process/composition'

const [url, query] = process.argv.slice(2)
const db = await openDb({ databaseUrl: url, migrate: false })
composition().setDb(db)
// What the process holds before the export starts (code, the pool): the export's own memory is the peak above this.
const rssBeforeMiB = Math.round(process.memoryUsage().rss / 2 ** 20)
const started = performance.now()
let firstByteMs: number | null = null
// The viewer token bench:export made (BENCH_TOKEN): an export answers only a signed-in caller.
const headers = { authorization: `Bearer ${process.env.BENCH_TOKEN ?? ''}` }
const response = await exportRoute.GET(new Request(`http://lazarus.bench/api/export?${query}`, { headers }), { params: Promise.resolve({}) })
if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`)
const reader = response.body!.getReader()
let bytes = 0
let lines = 0
for (;;) {
  const { done, value } = await reader.read()
  if (done) break
  firstByteMs ??= performance.now() - started
  bytes += value.length
  for (let i = value.indexOf(10); i >= 0; i = value.indexOf(10, i + 1)) lines++
}
const seconds = (performance.now() - started) / 1000
await db.close()
const usage = process.resourceUsage()
process.stdout.write(
  `${JSON.stringify({ lines, bytes, seconds, firstByteMs, rssBeforeMiB, peakRssMiB: Math.round(usage.maxRSS / 1024), cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6 })}\n`,
)
