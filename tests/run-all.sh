#!/usr/bin/env bash
# The whole suite (README: `npm test`): typecheck and lint, unit and integration tests (Vitest), and the browser tests
# (Playwright, Debian's Chromium) against the production build. Needs PostgreSQL and RabbitMQ on 127.0.0.1 (see
# .ci/services.sh). The high-volume runs are apart, in `npm run test:soak`.
#
# On two cores most of the suite waits on the broker and the database, so the phases overlap where they can
# (docs/ARCHITECTURE.md#tests): the production build and the checks run from the start, beside the two files that need
# RabbitMQ to themselves; then Vitest, with the JetStream files one at a time beside it; the browser tests once the
# build and the JetStream files are done; the built artifact's tests beside the rest of them once Vitest is done.
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

# The two files that stop RabbitMQ or raise its memory alarm for everyone run while nothing else uses the broker: now,
# beside the checks and the build, which never touch it. Mostly they wait on the broker, so they cost the checks little.
phase "vitest: the files that need the broker alone (in the background, log in test-results/vitest-alone.log)"
npx vitest run --project integration-alone --reporter=default --reporter=json --outputFile.json=test-results/vitest-alone.json > test-results/vitest-alone.log 2>&1 &
alone=$!

# The house rules (docs/ARCHITECTURE.md#house-rules): types, lint with zero warnings, import boundaries and cycles,
# unused code, in the background from the start. A failure fails the run, but the tests still run so one push shows
# everything.
phase "checks: npm run typecheck, then npm run lint (in the background, log in test-results/checks.log)"
(
  checks=0
  npm run --silent typecheck || { echo "typecheck failed" >&2; checks=1; }
  npm run --silent lint || { echo "lint failed" >&2; checks=1; }
  exit $checks
) > test-results/checks.log 2>&1 &
checks=$!

wait "$alone" || status=1
phase "vitest: the files that needed the broker alone are done"
cat test-results/vitest-alone.log

# Vitest's unit, integration and stores files from here, beside the checks and the build, then beside the browser tests.
# Each side writes its own log, printed when it ends, so the outputs do not interleave.
phase "vitest: unit, integration and stores (log in test-results/vitest.log, printed when it ends)"
npx vitest run --project unit --project integration --project integration-own-process --project stores-postgres --project stores-pglite --reporter=default --reporter=json --outputFile.json=test-results/vitest.json > test-results/vitest.log 2>&1 &
vitest=$!

# The JetStream files, one at a time, beside them: no integration file uses NATS, and the browser tests' servers,
# which keep their advisories in a stream of their own, start once these are done (docs/ARCHITECTURE.md#tests).
phase "vitest: the JetStream files, one at a time (log in test-results/vitest-jetstream.log)"
npx vitest run --project integration-jetstream --reporter=default --reporter=json --outputFile.json=test-results/vitest-jetstream.json > test-results/vitest-jetstream.log 2>&1 &
jetstream=$!

wait "$checks" || status=1
phase "checks: done"
cat test-results/checks.log

wait "$jetstream" || status=1
phase "vitest: the JetStream files are done"
cat test-results/vitest-jetstream.log

phase "build: waiting for it"
playwright=
if wait "$build"; then
  phase "playwright: beside Vitest (log in test-results/playwright.log, printed when it ends)"
  PLAYWRIGHT_JSON_OUTPUT_NAME=test-results/playwright.json npx playwright test --reporter=list,json > test-results/playwright.log 2>&1 &
  playwright=$!
else
  tail -60 test-results/build.log
  echo "build failed: browser tests not run" >&2
  status=1
fi

wait "$vitest" || status=1
phase "vitest: done"
cat test-results/vitest.log

if [ -n "$playwright" ]; then
  phase "artifact: the production build, copied outside the repository, migrates, serves, drains and replays (beside the browser tests)"
  npx vitest run --project artifact --reporter=default --reporter=json --outputFile.json=test-results/vitest-artifact.json || status=1
  wait "$playwright" || status=1
  phase "playwright: done"
  cat test-results/playwright.log
fi

node tests/summarise.mjs test-results/vitest.json test-results/playwright.json test-results/vitest-artifact.json test-results/vitest-alone.json test-results/vitest-jetstream.json || status=1
phase "done"
exit $status
