// Runs before `npm start` and `npm run worker`: a checkout runs its production build, so it builds once first when
// there is none, when the checkout has moved to another commit since, or when LAZARUS_REBUILD=1 says so.
// Plain JavaScript on purpose: it runs before anything is compiled.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { checkoutCommit } from './checkout.mjs'

const BUILD_INFO = '.next/standalone/dist/build.json'

function reasonToBuild() {
  if (process.env.LAZARUS_REBUILD === '1') return 'LAZARUS_REBUILD=1'
  if (!existsSync(BUILD_INFO)) return 'no build found'
  const built = JSON.parse(readFileSync(BUILD_INFO, 'utf8')).commit
  const head = checkoutCommit()
  if (built && head && built !== head) return `the build is of commit ${built.slice(0, 7)} and the checkout is at ${head.slice(0, 7)}`
  return null
}

const reason = reasonToBuild()
if (reason) {
  console.log(`Lazarus: ${reason}: running \`npm run build\` (about a minute)`)
  const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' })
  if (build.status !== 0) process.exit(build.status ?? 1)
}
