import { getConfigOrExit } from '@/lib/server/config'
import { getDb } from '@/lib/server/db'
import { installShutdown, startBackground } from '@/lib/server/runtime/background'

/** `npm run worker`: the drainer and the replay executor without the web server. */
async function main() {
  const config = getConfigOrExit()
  if (!config.DATABASE_URL) {
    console.error('npm run worker needs DATABASE_URL: the embedded database can only be used by one process (npm start).')
    process.exit(78)
  }
  await getDb()
  installShutdown()
  await startBackground()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
