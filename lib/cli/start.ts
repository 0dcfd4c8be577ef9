/**
 * `npm start`: validate configuration, apply pending migrations, build the app if no build exists,
 * then run the web server with the drainer inside it (LAZARUS_RUN_WORKERS=0 for web only).
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { getConfigOrExit } from '@/lib/server/config'
import { openDb } from '@/lib/server/db'

const root = process.cwd()
const serverJs = path.join(root, '.next/standalone/server.js')

/**
 * Until sign-in exists Lazarus listens on loopback unless HOSTNAME names an address to bind. Shells and
 * containers often export HOSTNAME as the machine's name; that is not a request to listen publicly.
 */
function listenHost(hostname: string | undefined): string {
  if (!hostname) return '127.0.0.1'
  const isAddress = /^(\d{1,3}\.){3}\d{1,3}$/.test(hostname) || hostname.includes(':') || hostname === 'localhost'
  return isAddress ? hostname : '127.0.0.1'
}

async function main() {
  const config = getConfigOrExit()
  const env = {
    ...process.env,
    // The standalone server changes its working directory: hand it absolute paths.
    LAZARUS_DATA_DIR: path.resolve(root, config.LAZARUS_DATA_DIR),
    LAZARUS_MIGRATIONS_DIR: path.resolve(root, 'prisma/migrations'),
    PORT: String(config.PORT),
    // Until sign-in exists, listen on loopback only unless told otherwise.
    HOSTNAME: listenHost(process.env.HOSTNAME),
  }
  process.env.LAZARUS_MIGRATIONS_DIR = env.LAZARUS_MIGRATIONS_DIR
  process.env.LAZARUS_DATA_DIR = env.LAZARUS_DATA_DIR

  const db = await openDb()
  console.log(`[start] database ready (${db.sql.kind === 'pglite' ? `embedded, ${env.LAZARUS_DATA_DIR}` : 'PostgreSQL'}), migrations applied`)
  await db.close()

  if (!existsSync(serverJs) || process.env.LAZARUS_REBUILD === '1') {
    console.log('[start] no build found: running `npm run build` (once)')
    const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit', env: process.env })
    if (build.status !== 0) process.exit(build.status ?? 1)
  }

  console.log(`[start] Lazarus on http://${env.HOSTNAME}:${env.PORT}`)
  const server = spawn(process.execPath, [serverJs], { stdio: 'inherit', env })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.kill(signal))
  server.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
}

main().catch((error) => {
  console.error('[start] failed:', error instanceof Error ? error.message : error)
  process.exit(1)
})
