// Prints one closing line for the whole suite, "N passed, N failed", from the Vitest and Playwright JSON reports,
// preceded by the ten slowest test files (so the next slow file is seen the run it arrives) and by the name and first
// error line of every failed test, so a CI log's tail says what failed.
import { existsSync, readFileSync } from 'node:fs'
import { relative } from 'node:path'

let passed = 0
let failed = 0
let skipped = 0
const failures = []
/** Seconds per test file, both runners: Vitest files by wall time, Playwright files by the sum of their tests. */
const fileSeconds = []
// Usage: summarise.mjs <vitest.json> <playwright.json> [more Vitest reports, such as the built artifact's]
const [vitestFile, playwrightFile, ...moreVitestFiles] = process.argv.slice(2)

const firstLine = (text) =>
  String(text ?? '')
    .replace(/\u001b\[[0-9;]*m/g, '')
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line.length > 0)
    ?.slice(0, 300) ?? ''

function collectVitest(vitestFile) {
  if (!vitestFile || !existsSync(vitestFile)) {
    console.error(`no Vitest report${vitestFile ? ` ${vitestFile}` : ''}`)
    failed++
    return
  }
  const report = JSON.parse(readFileSync(vitestFile, 'utf8'))
  passed += report.numPassedTests ?? 0
  failed += (report.numFailedTests ?? 0) + (report.numRuntimeErrorTestSuites ?? 0)
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0)
  for (const file of report.testResults ?? []) {
    const name = relative(process.cwd(), file.name ?? '')
    if (file.startTime && file.endTime) fileSeconds.push([name, (file.endTime - file.startTime) / 1000])
    const failedTests = (file.assertionResults ?? []).filter((test) => test.status === 'failed')
    for (const test of failedTests) {
      failures.push(`${name} › ${test.fullName ?? test.title}: ${firstLine(test.failureMessages?.[0])}`)
    }
    if (file.status === 'failed' && failedTests.length === 0) failures.push(`${name}: ${firstLine(file.message)}`)
  }
}
for (const file of [vitestFile, ...moreVitestFiles]) collectVitest(file)

const playwrightSeconds = new Map()

function collectPlaywright(suite, file) {
  for (const spec of suite.specs ?? []) {
    for (const test of spec.tests ?? []) {
      const path = `tests/e2e/${spec.file ?? file}`
      const spent = (test.results ?? []).reduce((sum, result) => sum + (result.duration ?? 0), 0) / 1000
      playwrightSeconds.set(path, (playwrightSeconds.get(path) ?? 0) + spent)
      if (test.status !== 'unexpected') continue
      const error = test.results?.at(-1)?.error?.message
      failures.push(`${spec.file ?? file} › ${spec.title} [${test.projectName}]: ${firstLine(error)}`)
    }
  }
  for (const child of suite.suites ?? []) collectPlaywright(child, suite.file ?? file)
}

if (playwrightFile && existsSync(playwrightFile)) {
  const report = JSON.parse(readFileSync(playwrightFile, 'utf8'))
  const stats = report.stats ?? {}
  passed += (stats.expected ?? 0) + (stats.flaky ?? 0)
  failed += stats.unexpected ?? 0
  skipped += stats.skipped ?? 0
  for (const suite of report.suites ?? []) collectPlaywright(suite, suite.file)
  for (const error of report.errors ?? []) failures.push(`playwright: ${firstLine(error.message)}`)
  fileSeconds.push(...playwrightSeconds)
} else {
  console.error('no Playwright report')
  failed++
}

const slowest = fileSeconds.sort((a, b) => b[1] - a[1]).slice(0, 10)
if (slowest.length > 0) {
  console.log('\nSlowest test files:')
  for (const [name, seconds] of slowest) console.log(`  ${seconds.toFixed(1).padStart(6)} s  ${name}`)
}

if (failures.length > 0) console.log(`\nFailed:\n${failures.map((line) => `  ✘ ${line}`).join('\n')}`)
console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped`)
process.exit(failed > 0 ? 1 : 0)
