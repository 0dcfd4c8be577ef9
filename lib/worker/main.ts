import { getConfigOrExit } from '@/lib/server/platform/config'
import { logger } from '@/lib/server/platform/log'
import { composition } from '@/lib/server/platform/process/composition'
import { installShutdown, startBackground } from '@/lib/server/platform/runtime/background'
import { preferBuiltMigrations } from '@/lib/server/platform/runtime/built-dir'

const log = logger('worker')

/** `npm run worker`: the drainer and the replay executor without the web server. */
async function main() {
  preferBuiltMigrations()
  const config = getConfigOrExit()
  if (!config.DATABASE_URL) {
    log.error('npm run worker needs DATABASE_URL: the embedded database can only be used by one process (npm start)')
    process.exit(78)
  }
  const root = composition()
  await root.db()
  installShutdown()
  await startBackground(root)
}

main().catch((error) => {
  log.error('worker failed', { error: error instanceof Error ? error : String(error) })
  process.exit(1)
})
