import 'server-only'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The production build this process runs from, or undefined when it runs from source (tsx). Built, every process entry
 * point is a bundle in <build>/dist/ (lib/build/bundle-processes.mjs), and <build> is Next's standalone output, which
 * may have been copied anywhere (docs/operations.md#the-artifact).
 */
export function builtDir(): string | undefined {
  const besideBundle = fileURLToPath(new URL('..', import.meta.url))
  return existsSync(path.join(besideBundle, '.next/required-server-files.json')) ? besideBundle : undefined
}

/** A built process reads the migrations the build carries, wherever it is started from, unless told otherwise. */
export function preferBuiltMigrations(): void {
  const built = builtDir()
  if (built) process.env.LAZARUS_MIGRATIONS_DIR ??= path.join(built, 'prisma/migrations')
}
