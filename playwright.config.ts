import { defineConfig, devices } from '@playwright/test'

const PORT = Number(process.env.E2E_PORT ?? 3100)

export default defineConfig({
  testDir: './tests/e2e',
  outputDir: './test-results/e2e',
  forbidOnly: !!process.env.CI,
  retries: 0,
  // Two cores, one server and one shared database: tests run one at a time.
  workers: 1,
  timeout: 60_000,
  use: { baseURL: `http://127.0.0.1:${PORT}`, trace: 'retain-on-failure', screenshot: 'only-on-failure' },
  projects: [
    // Signs the admin in through the sign-in page once; every spec starts from that browser state.
    { name: 'setup', testMatch: /auth\.setup\.ts/, use: { launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--disable-gpu', '--disable-quic'] } } },
    {
      name: 'chromium',
      dependencies: ['setup'],
      use: {
        ...devices['Desktop Chrome'],
        storageState: 'test-results/.auth/admin.json',
        viewport: { width: 1440, height: 900 },
        // Debian's Chromium; Playwright must never download a browser here.
        launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--disable-gpu', '--disable-quic'] },
      },
    },
  ],
  webServer: {
    command: `bash tests/e2e/serve.sh ${PORT}`,
    url: `http://127.0.0.1:${PORT}/api/health`,
    reuseExistingServer: false,
    timeout: 120_000,
    stdout: 'pipe',
  },
})
