/**
 * The web server process (`npm start` runs its build, .next/standalone/dist/serve.mjs; `npm run dev` runs this file with
 * --dev): Next.js behind Lazarus' HTTP front (lib/server/platform/http/front.ts), in one process. The front owns the
 * listening socket, so no request reaches Next without passing it.
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import path from 'node:path'
import { isLoopbackHostname } from '@/lib/server/platform/addresses'
import { getConfigOrExit } from '@/lib/server/platform/config'
import { openDb } from '@/lib/server/platform/db'
import { gracefulCloser } from '@/lib/server/platform/http/close-gracefully'
import { applyConnectionTimeouts } from '@/lib/server/platform/http/connection-timeouts'
import { createFront } from '@/lib/server/platform/http/front'
import { MAX_JSON_BYTES } from '@/lib/server/platform/http/handle-route'
import { REVISIONS_PATH, revisionRequestBytes } from '@/lib/server/messages/revision-request-limit'
import { logger } from '@/lib/server/platform/log'
import { onBeforeShutdown } from '@/lib/server/platform/runtime/before-shutdown'
import { builtDir, preferBuiltMigrations } from '@/lib/server/platform/runtime/built-dir'
import { listenAddress, refuseUnsafeListen } from './listen'

const log = logger('serve')

/** How long requests in flight have to finish on SIGTERM; within the 15 s a process gives itself to stop. */
const SHUTDOWN_GRACE_MS = 10_000

type NextApp = {
  prepare(): Promise<void>
  getRequestHandler(): (req: unknown, res: unknown) => Promise<void>
  getUpgradeHandler(): (req: unknown, socket: unknown, head: unknown) => Promise<void>
}

async function main() {
  const dev = process.argv.includes('--dev')
  // Run from source (tsx) without --dev, it serves the repository's build.
  const dir = dev ? process.cwd() : (builtDir() ?? path.join(process.cwd(), '.next/standalone'))
  preferBuiltMigrations()
  const config = getConfigOrExit()
  // Next runs with the build as its working directory (below) and reads its configuration from the environment: a
  // relative data folder would point into the build.
  process.env.LAZARUS_DATA_DIR = path.resolve(config.LAZARUS_DATA_DIR)
  const hostname = listenAddress(process.env.HOSTNAME)
  await refuseUnsafeListen({ hostname, config })
  // Migrate (and prove the database answers) before listening: a server that cannot reach its database should not
  // start taking requests it can only answer with errors. Next opens its own handle afterwards.
  const db = await openDb()
  await db.close()

  if (!dev) {
    // What .next/standalone/server.js does before starting Next: its config comes from the build, not next.config.ts.
    const serverFiles = JSON.parse(readFileSync(path.join(dir, '.next/required-server-files.json'), 'utf8')) as { config: unknown }
    process.env.__NEXT_PRIVATE_STANDALONE_CONFIG = JSON.stringify(serverFiles.config)
    ;(process.env as Record<string, string>).NODE_ENV = 'production'
    process.chdir(dir)
  }
  const next = createRequire(path.join(dir, 'package.json'))('next') as (options: Record<string, unknown>) => NextApp
  const app = next({ dev, dir, hostname, port: config.PORT, customServer: true })
  await app.prepare()
  const handle = app.getRequestHandler()

  const front = createFront((req, res) => handle(req, res), {
    publicUrl: config.LAZARUS_PUBLIC_URL,
    trustedProxies: config.LAZARUS_TRUSTED_PROXIES,
    identityHeaders: [config.LAZARUS_PROXY_USER_HEADER, config.LAZARUS_PROXY_GROUPS_HEADER],
    maxBodyBytes: MAX_JSON_BYTES,
    largeBodyRoutes: [{ path: REVISIONS_PATH, maxBytes: revisionRequestBytes(config.LAZARUS_REPLAY_MAX_BODY_BYTES) }],
    dev,
  })
  const server = createServer((req, res) => {
    if (closer.closing()) res.setHeader('connection', 'close')
    return front(req, res)
  })
  const closer = gracefulCloser(server)
  // On SIGTERM (a rolling restart), before the engines and the database go: the requests in flight are answered.
  onBeforeShutdown(() => closer.close(SHUTDOWN_GRACE_MS))
  if (dev) {
    const upgrade = app.getUpgradeHandler()
    server.on('upgrade', (req, socket, head) =>
      void upgrade(req, socket, head).catch((error: unknown) => {
        // next dev's hot-reload socket: the browser reconnects; worth a line only when debugging.
        log.debug('websocket upgrade failed', { error: (error as Error).message })
        socket.destroy()
      }),
    )
  }
  applyConnectionTimeouts(server)
  server.on('error', (error: NodeJS.ErrnoException) => {
    log.error(error.code === 'EADDRINUSE' ? `port ${config.PORT} is in use` : 'server error', { error: error.message })
    process.exit(1)
  })
  server.listen(config.PORT, hostname, () => {
    const shown = hostname.includes(':') ? `[${hostname}]` : hostname
    log.info(`Lazarus on http://${shown}:${config.PORT}${config.LAZARUS_PUBLIC_URL ? ` (public URL ${config.LAZARUS_PUBLIC_URL})` : ''}`)
    if (!isLoopbackHostname(hostname)) log.info('listening beyond loopback: only LAZARUS_PUBLIC_URL\'s host is answered')
  })
}

main().catch((error) => {
  log.error('start-up failed', { error: error instanceof Error ? error.message : String(error) })
  process.exit(1)
})
