// `npm run build`'s second half (package.json "postbuild"): makes Next's standalone output a complete, self-contained
// production build (docs/operations.md#the-artifact). Next leaves out the static assets and Lazarus' SQL migrations,
// and knows nothing of the processes outside Next (the HTTP front, the worker, the migrations runner, the database
// move), which are compiled here.
import { cp, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { bundleProcesses } from './bundle-processes.mjs'
import { checkoutCommit } from './checkout.mjs'

const root = fileURLToPath(new URL('../..', import.meta.url))
const build = path.join(root, '.next/standalone')

await cp(path.join(root, '.next/static'), path.join(build, '.next/static'), { recursive: true })
await rm(path.join(build, 'prisma'), { recursive: true, force: true })
await cp(path.join(root, 'prisma/migrations'), path.join(build, 'prisma/migrations'), { recursive: true })
const { packages } = await bundleProcesses({ outdir: path.join(build, 'dist') })
const { version } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8'))
// Read by `npm start` (lib/build/ensure-build.mjs) to rebuild a checkout that moved on since its build.
await writeFile(path.join(build, 'dist/build.json'), `${JSON.stringify({ version, commit: checkoutCommit(root), builtAt: new Date().toISOString() }, null, 2)}\n`)
console.log(`build complete: ${path.relative(root, build)} (processes in dist/; packages from its node_modules: ${packages.join(', ')})`)
