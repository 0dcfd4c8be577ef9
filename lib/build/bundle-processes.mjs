// Compiles Lazarus' own process entry points (the web server's HTTP front, the worker, the migrations runner, the
// database move, the container's health check) to JavaScript, so production runs `node` on built files and never compiles TypeScript
// (docs/operations.md#the-artifact).
//
// Most packages are bundled in, so the build beside Next's standalone output needs no install of its own. The few left
// as imports are the ones Next's standalone output carries too: the same copies must be shared with Next's server
// (amqplib, whose header codec is patched once per copy; next; react), or they load native code, wasm or worker files
// by path and cannot be bundled (PGlite, argon2, Prisma's runtime, pino).
import { build } from 'esbuild'
import { existsSync } from 'node:fs'
import { isBuiltin } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))

export const PROCESS_ENTRIES = {
  serve: 'lib/cli/serve.ts',
  worker: 'lib/worker/main.ts',
  migrate: 'lib/cli/migrate.ts',
  move: 'lib/cli/move.ts',
  healthcheck: 'lib/cli/healthcheck.ts',
}

const SHARED_PACKAGES = ['amqplib', 'next', 'react', 'react-dom', '@electric-sql/pglite', 'pglite-prisma-adapter', '@node-rs/argon2', '@prisma/client', 'pg', 'pino']

/** The package a bare import names: `@prisma/client/runtime/x` → `@prisma/client`. */
const packageOf = (specifier) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/')

function findPackage(fromDir, name) {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'node_modules', name, 'package.json'))) return true
    if (path.dirname(dir) === dir) return false
  }
}

/**
 * Writes `<outdir>/{serve,worker,migrate,move,healthcheck}.mjs` with source maps. Fails when a package the bundles
 * import at run time cannot be found from outdir, so a build that would crash at start-up never ships. `entries`
 * compiles other entry points the same way (a bench's measured process, so it runs as production code does).
 */
export async function bundleProcesses({ outdir, entries = PROCESS_ENTRIES }) {
  const out = path.resolve(root, outdir)
  const result = await build({
    absWorkingDir: root,
    entryPoints: entries,
    outdir: out,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    external: SHARED_PACKAGES,
    // `server-only` is empty under this condition, as in Next's server bundles.
    conditions: ['react-server'],
    platform: 'node',
    format: 'esm',
    target: 'node20.19',
    // Bundled CommonJS packages call require() for Node's built-ins, which an ES module lacks.
    banner: { js: "import { createRequire as __lazarusRequire } from 'node:module'; const require = __lazarusRequire(import.meta.url);" },
    sourcemap: 'linked',
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
  })
  // amqplib is required by computed path (lib/server/platform/broker/amqplib.ts), out of the bundler's sight.
  const imported = new Set(['amqplib'])
  for (const output of Object.values(result.metafile.outputs)) {
    for (const { path: specifier, external } of output.imports) {
      if (external && !isBuiltin(specifier) && !specifier.startsWith('.')) imported.add(packageOf(specifier))
    }
  }
  const missing = [...imported].filter((name) => !findPackage(out, name))
  if (missing.length) throw new Error(`the process bundles in ${out} import packages not found from there: ${missing.join(', ')}`)
  return { outdir: out, packages: [...imported].sort() }
}
