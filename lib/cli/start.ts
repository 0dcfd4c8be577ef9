/**
 * `npm start`: validate configuration, apply pending migrations, build the app if no build exists,
 * then run the web server with the drainer inside it (LAZARUS_RUN_WORKERS=0 for web only).
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { getConfigOrExit } from '@/lib/server/platform/config'
import { openDb } from '@/lib/server/platform/db'
import { logger } from '@/lib/server/platform/log'
import { listenAddress, refuseUnsafeListen } from './listen'

const root = process.cwd()
const serverJs = path.join(root, '.next/standalone/server.js')
const log = logger('start')

async function main() {
  const config = getConfigOrExit()
  const env = {
    ...process.env,
    // The standalone server changes its working directory: hand it absolute paths.
    LAZARUS_DATA_DIR: path.resolve(root, config.LAZARUS_DATA_DIR),
    LAZARUS_MIGRATIONS_DIR: path.resolve(root, 'prisma/migrations'),
    PORT: String(config.PORT),
    HOSTNAME: listenAddress(process.env.HOSTNAME),
  }
  process.env.LAZARUS_MIGRATIONS_DIR = env.LAZARUS_MIGRATIONS_DIR
  process.env.LAZARUS_DATA_DIR = env.LAZARUS_DATA_DIR

  await refuseUnsafeListen({ hostname: env.HOSTNAME, config })
  const db = await openDb()
  log.info(`database ready (${db.sql.kind === 'pglite' ? `embedded, ${env.LAZARUS_DATA_DIR}` : 'PostgreSQL'}), migrations applied`)
  await db.close()

  if (!existsSync(serverJs) || process.env.LAZARUS_REBUILD === '1') {
    log.info('no build found: running `npm run build` (once)')
    const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit', env: process.env })
    if (build.status !== 0) process.exit(build.status ?? 1)
  }

  // The server process runs Next.js behind Lazarus' HTTP front (lib/cli/serve.ts), never Next's own server.js.
  const server = spawn(process.execPath, ['--max-semi-space-size=8', '--conditions=react-server', '--import', 'tsx', path.join(root, 'lib/cli/serve.ts')], { stdio: 'inherit', env })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.kill(signal))
  server.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
}

main().catch((error) => {
  log.error('start-up failed', { error: error instanceof Error ? error.message : String(error) })
  process.exit(1)
})
