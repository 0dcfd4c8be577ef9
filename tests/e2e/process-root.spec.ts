import { getJson, pollJson } from './support/api-json'
import { expect, test } from './support/fixtures'

/*
 * The built server's composition root (lib/server/platform/process/composition.ts). Next loads instrumentation.ts,
 * which starts the engines, and the route handlers as separate bundles, each with its own copy of every module; the
 * root is kept once per process (lib/server/platform/per-process.ts), so a route sees the engines another bundle
 * started. A route with a root of its own would report no drainer here ("not-running-here" and null).
 */

test('the routes see the engines that instrumentation started, through the one composition root', async ({ request }) => {
  await expect
    .poll(async () => (await pollJson<{ drainer?: { state: string } }>(request, '/api/health'))?.drainer?.state, { message: 'the health route reports the drainer of this process' })
    .toMatch(/^(starting|running|broker-unavailable)$/)
  const summary = await getJson<{ drainer: { state: string } | null }>(request, '/api/summary')
  expect(summary.drainer?.state).toMatch(/^(starting|running|broker-unavailable)$/)
})
