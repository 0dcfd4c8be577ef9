import 'server-only'
import { prepareFirstRun } from '@/lib/server/auth/first-run'
import { getConfigOrExit } from '@/lib/server/platform/config'
import { logger } from '@/lib/server/platform/log'
import { composition } from '@/lib/server/platform/process/composition'
import { installShutdown, startBackground } from './background'

const log = logger('web')

/** Called once by instrumentation.ts: validates config, migrates, prepares the first sign-in, starts workers unless they run elsewhere. */
export async function bootWebProcess(): Promise<void> {
  const config = getConfigOrExit()
  const root = composition()
  const db = await root.db()
  installShutdown()
  await prepareFirstRun({ db, config, log: logger('auth') }).catch((error) => log.error('first-run preparation failed', { error: (error as Error).message }))
  if (!config.LAZARUS_RUN_WORKERS) {
    log.info('LAZARUS_RUN_WORKERS=0: this process serves the web UI and API only')
    return
  }
  // Never block or crash the web server on a broker outage: the drainer reconnects on its own.
  void startBackground(root).catch((error) => log.error('background workers failed to start', { error }))
}
