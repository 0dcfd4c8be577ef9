import { defineConfig } from 'vitest/config'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

/**
 * Files that change the broker for everyone (stop RabbitMQ, raise its memory alarm) run in a group of their own, one at
 * a time, before anything else uses the broker (docs/ARCHITECTURE.md#tests).
 */
const ALONE = [
  'tests/integration/drain-resilience.test.ts',
  'tests/integration/replay-blocked.test.ts',
]

/**
 * Files that make and remove streams keeping every stream's failure advisories, of which the NATS server allows one at
 * a time (docs/jetstream.md#capture): one at a time, beside the integration files (none of which uses NATS) and before
 * the browser tests, whose servers keep their advisories in a stream of their own.
 */
const JETSTREAM_ALONE = [
  'tests/integration/jetstream-capture.test.ts',
  // The demo's JetStream part makes Lazarus' stream on every stream's advisories, as Lazarus does on its first start.
  'tests/integration/demo-seed-jetstream.test.ts',
  // Replays through JetStream, with a capture of its own for the copies that fail again (docs/jetstream.md#replay).
  'tests/integration/jetstream-replay.test.ts',
  // Removal after capture, and the sources page's facts (docs/jetstream.md#removing-captured-messages).
  'tests/integration/jetstream-removal.test.ts',
  'tests/integration/jetstream-source-facts.test.ts',
  // The topology doctor's JetStream traps: a stream keeping every stream's advisories would keep its traps' too.
  'tests/integration/jetstream-doctor.test.ts',
]

/**
 * Integration files share one module graph per worker (`isolate: false`): loading Lazarus' modules anew for each of
 * ~120 files cost a third of the Vitest phase's CPU (docs/ARCHITECTURE.md#tests). The process's configuration is read
 * once (lib/server/platform/config.ts), so a file that sets its own (the environment before the first read, or the
 * pause topology's names through isolatePauseTopology) runs in a process of its own. Found by reading the files, so a
 * new one is placed without a list to keep; tests/helpers/shared-process.ts fails a file that changes the
 * configuration without being found here.
 */
/**
 * A backstop for a test that hangs, not a speed limit: every wait inside a test has its own bound. Sized for a slow
 * two-core machine where the integration files share the CPU with the browser tests: the slowest test took 69 s there
 * (api-triage's paging, a few seconds alone).
 */
const INTEGRATION_TIMEOUT_MS = 300_000

const CONFIGURES_ITS_PROCESS = /isolatePauseTopology\(|process\.env(\.\w+|\[[^\]]+\])\s*(=(?!=)|\?\?=)|delete process\.env|vi\.stubEnv/
const OWN_PROCESS = readdirSync(path.join(import.meta.dirname, 'tests/integration'), { recursive: true, encoding: 'utf8' })
  .filter((name) => name.endsWith('.test.ts'))
  .map((name) => `tests/integration/${name.split(path.sep).join('/')}`)
  .filter((file) => ![...ALONE, ...JETSTREAM_ALONE].includes(file) && CONFIGURES_ITS_PROCESS.test(readFileSync(path.join(import.meta.dirname, file), 'utf8')))

/** What `npm run test:soak` runs at production-like sizes (tests/helpers/soak.ts); `npm test` runs them smaller. */
const SOAK = [
  'tests/integration/drain-crash-safety.test.ts',
  'tests/integration/export-memory.test.ts',
  'tests/integration/replay-crash-safety.test.ts',
  'tests/integration/replay-staged-crash.test.ts',
]

/**
 * The stores' tests (tests/stores/) once per database engine Lazarus runs on: PostgreSQL, and the embedded PGlite of
 * `npm start` without DATABASE_URL (docs/decisions/0002). tests/helpers/engine-db.ts reads LAZARUS_TEST_ENGINE.
 */
const storesProject = (engine: 'postgres' | 'pglite') => ({
  extends: true as const,
  test: {
    name: `stores-${engine}`,
    include: ['tests/stores/**/*.test.ts'],
    // Moving a database starts from the embedded one and ends on PostgreSQL: one run covers both engines.
    exclude: engine === 'postgres' ? ['tests/stores/move-database.test.ts'] : [],
    environment: 'node',
    // One module graph per worker, as the integration files share theirs (see CONFIGURES_ITS_PROCESS).
    isolate: false,
    setupFiles: ['tests/helpers/shared-process.ts'],
    env: { LAZARUS_TEST_ENGINE: engine },
    // Copied for each test database rather than made anew: initdb and the migrations cost PGlite about 11 CPU s, and
    // the templates are kept between runs (tests/helpers/pglite-templates.ts).
    globalSetup: engine === 'pglite' ? ['tests/global-setup.ts', 'tests/helpers/pglite-templates.ts'] : ['tests/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})

export default defineConfig({
  resolve: {
    alias: {
      '@': path.resolve(import.meta.dirname),
      // Tests run outside React's server environment; the marker's real guard is the Next build.
      'server-only': path.resolve(import.meta.dirname, 'node_modules/server-only/empty.js'),
    },
  },
  test: {
    setupFiles: ['tests/setup-env.ts'],
    globalSetup: ['tests/global-setup.ts'],
    // Integration files mostly wait on the broker and the database, so more of them than cores run at once.
    maxWorkers: 3,
    projects: [
      {
        extends: true,
        // Pure logic with no process state: one module graph shared by the files saves most of the project's CPU
        // (17 s → 6 s on two cores); each integration file keeps its own, for its own composition root.
        // The timeout is a backstop, as for the integration files: drain-allocations' child process passed the default
        // 5 s beside the browser tests on a slow machine.
        test: { name: 'unit', include: ['tests/unit/**/*.test.ts'], environment: 'node', isolate: false, testTimeout: 60_000 },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['tests/integration/**/*.test.ts'],
          exclude: [...ALONE, ...JETSTREAM_ALONE, ...OWN_PROCESS],
          environment: 'node',
          isolate: false,
          setupFiles: ['tests/helpers/shared-process.ts'],
          testTimeout: INTEGRATION_TIMEOUT_MS,
          hookTimeout: INTEGRATION_TIMEOUT_MS,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-own-process',
          include: OWN_PROCESS,
          environment: 'node',
          testTimeout: INTEGRATION_TIMEOUT_MS,
          hookTimeout: INTEGRATION_TIMEOUT_MS,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-alone',
          include: ALONE,
          environment: 'node',
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
          testTimeout: INTEGRATION_TIMEOUT_MS,
          hookTimeout: INTEGRATION_TIMEOUT_MS,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-jetstream',
          include: JETSTREAM_ALONE,
          environment: 'node',
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
          testTimeout: INTEGRATION_TIMEOUT_MS,
          hookTimeout: INTEGRATION_TIMEOUT_MS,
        },
      },
      {
        extends: true,
        test: {
          name: 'soak',
          include: SOAK,
          environment: 'node',
          env: { LAZARUS_SOAK: '1' },
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 3 },
          testTimeout: 600_000,
          hookTimeout: 600_000,
        },
      },
      storesProject('postgres'),
      storesProject('pglite'),
      {
        extends: true,
        // The production build, copied and run outside the repository: needs `npm run build` first, so tests/run-all.sh
        // runs it once the build is done (`npm run test:artifact` builds, then runs it).
        test: { name: 'artifact', include: ['tests/artifact/**/*.test.ts'], environment: 'node', testTimeout: 120_000, hookTimeout: 120_000 },
      },
    ],
  },
})
