import { defineConfig, devices } from '@playwright/test'
import { chromiumExecutable } from './tests/e2e/support/chromium'
import { E2E_WORKERS, e2eSlot } from './tests/e2e/support/slots'

// Debian's Chromium, its headless shell when installed (tests/e2e/support/chromium.ts); Playwright must never download a
// browser here. With no GPU, Chromium would emulate one in its GPU process (SwiftShader) to composite every frame;
// software compositing does the same work for less CPU (docs/ARCHITECTURE.md#tests). A test page lives seconds, too
// short for V8's optimising compiler (TurboFan) to repay what it costs: without it Chromium spent 14-18 % less CPU on
// the same specs (Maglev, the quicker optimiser, still runs, for the topology layout's loops).
const launchOptions = {
  executablePath: chromiumExecutable(),
  args: ['--disable-gpu', '--disable-gpu-compositing', '--disable-software-rasterizer', '--disable-quic', '--js-flags=--no-opt'],
}
const slots = Array.from({ length: E2E_WORKERS }, (_, index) => e2eSlot(index))

export default defineConfig({
  testDir: './tests/e2e',
  outputDir: './test-results/e2e',
  forbidOnly: !!process.env.CI,
  retries: 0,
  // One Lazarus per worker (tests/e2e/support/slots.ts): specs in different workers share the broker, nothing else.
  workers: E2E_WORKERS,
  // A backstop for a test that hangs, not a speed limit (each wait has its own bound): on a slow two-core machine beside
  // Vitest, the alerts walk took 43 s of the 60 this was.
  timeout: 120_000,
  // A trace records a screencast and DOM snapshots of every test, kept or not: a fifth of the browser tests' CPU.
  // E2E_TRACE=1 records them and keeps those of failed tests (test-results/e2e/*/trace.zip).
  // Reduced motion, as a user may ask for it: a pulsing progress bar or skeleton would otherwise make Chromium composite
  // a frame 60 times a second for as long as the page shows it (7 % of a core each, measured).
  use: { trace: process.env.E2E_TRACE ? 'retain-on-failure' : 'off', screenshot: 'only-on-failure', reducedMotion: 'reduce' },
  projects: [
    // Signs the admin in through the sign-in page of every server once; every spec starts from its server's state.
    { name: 'setup', testMatch: /auth\.setup\.ts/, use: { launchOptions } },
    {
      name: 'chromium',
      dependencies: ['setup'],
      use: { ...devices['Desktop Chrome'], viewport: { width: 1440, height: 900 }, launchOptions },
    },
  ],
  webServer: slots.map((slot) => ({
    command: `bash tests/e2e/serve.sh ${slot.port}`,
    env: {
      E2E_DB: slot.database,
      E2E_SOURCES: slot.sources.join(','),
      LAZARUS_CONTROL_EXCHANGE: slot.controlExchange,
      LAZARUS_HOLD_QUEUE: slot.holdQueue,
    },
    url: `${slot.url}/api/health`,
    reuseExistingServer: false,
    timeout: 120_000,
    stdout: 'pipe' as const,
  })),
})
