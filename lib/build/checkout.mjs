// The commit a checkout is at, or null outside git (a copied folder, a container build): stamped into the build by
// complete-build.mjs and compared with it by ensure-build.mjs.
import { execFileSync } from 'node:child_process'

export function checkoutCommit(cwd = process.cwd()) {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim()
  } catch {
    return null
  }
}
