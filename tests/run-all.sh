#!/usr/bin/env bash
# The whole suite (README: `npm test`): typecheck and lint, unit and integration tests (Vitest), and the browser tests
# (Playwright, Debian's Chromium) against the production build. Needs PostgreSQL and RabbitMQ on 127.0.0.1 (see
# .ci/services.sh). The high-volume runs are apart, in `npm run test:soak`.
#
# On two cores most of the suite waits on the broker and the database, so the phases overlap where they can
# (docs/ARCHITECTURE.md#tests): the production build runs from the start, beside the checks and Vitest, and the browser
# tests start once both the build and Vitest are done.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-results
status=0
started=$(date +%s)
# Each phase line also says how busy the machine's CPUs were since the previous line: a phase near 100 % gains
# nothing from more parallelism, only from less work.
read_cpu() { awk '/^cpu /{ print $2+$3+$4+$7+$8+$9, $5+$6 }' /proc/stat; }
last_cpu=$(read_cpu)
phase() {
  local now busy idle last_busy last_idle
  now=$(read_cpu); read -r busy idle <<<"$now"; read -r last_busy last_idle <<<"$last_cpu"; last_cpu=$now
  local total=$(( busy - last_busy + idle - last_idle ))
  echo "[$(( $(date +%s) - started ))s] (CPU $(( total > 0 ? 100 * (busy - last_busy) / total : 0 ))% since the last line) $*"
}

phase "build: npm run build (in the background, log in test-results/build.log)"
# Types are checked below, by tsc over the whole repository.
LAZARUS_BUILD_TYPECHECKED=1 npm run build > test-results/build.log 2>&1 &
build=$!

# The house rules first (docs/ARCHITECTURE.md#house-rules): types, lint with zero warnings, import boundaries and
# cycles, unused code. A failure fails the run, but the tests still run so one push shows everything.
phase "typecheck: npm run typecheck"
npm run --silent typecheck || { echo "typecheck failed" >&2; status=1; }
phase "lint: npm run lint"
npm run --silent lint || { echo "lint failed" >&2; status=1; }

phase "vitest: unit and integration, then the files that need the machine alone"
npx vitest run --project unit --project integration --project integration-own-process --project integration-alone --project stores-postgres --project stores-pglite --reporter=default --reporter=json --outputFile.json=test-results/vitest.json || status=1

phase "build: waiting for it"
if wait "$build"; then
  phase "artifact: the production build, copied outside the repository, migrates, serves, drains and replays"
  npx vitest run --project artifact --reporter=default --reporter=json --outputFile.json=test-results/vitest-artifact.json || status=1
  phase "playwright"
  PLAYWRIGHT_JSON_OUTPUT_NAME=test-results/playwright.json npx playwright test --reporter=list,json || status=1
else
  tail -60 test-results/build.log
  echo "build failed: browser tests not run" >&2
  status=1
fi

node tests/summarise.mjs test-results/vitest.json test-results/playwright.json test-results/vitest-artifact.json || status=1
phase "done"
exit $status
