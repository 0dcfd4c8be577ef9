#!/usr/bin/env bash
# The whole suite (README: `npm test`): typecheck and lint, unit and integration tests (Vitest), then the production
# build and the browser tests (Playwright, Debian's Chromium). Needs PostgreSQL and RabbitMQ on 127.0.0.1 (see .ci/services.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-results
status=0

# The house rules first (docs/ARCHITECTURE.md#house-rules): types, lint with zero warnings, import boundaries and
# cycles, unused code. A failure fails the run, but the tests still run so one push shows everything.
echo "typecheck: npm run typecheck"
npm run --silent typecheck || { echo "typecheck failed" >&2; status=1; }
echo "lint: npm run lint"
npm run --silent lint || { echo "lint failed" >&2; status=1; }

npx vitest run --reporter=default --reporter=json --outputFile.json=test-results/vitest.json || status=1

echo "build: npm run build"
if npm run build > test-results/build.log 2>&1; then
  PLAYWRIGHT_JSON_OUTPUT_NAME=test-results/playwright.json npx playwright test --reporter=list,json || status=1
else
  tail -60 test-results/build.log
  echo "build failed: browser tests not run" >&2
  status=1
fi

node tests/summarise.mjs test-results/vitest.json test-results/playwright.json || status=1
exit $status
