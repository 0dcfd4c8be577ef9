/**
 * Child process of data-dir-lock.test.ts: opens the embedded database in the directory it is given, the way the
 * server process does, says "ready" and holds it until it is killed.
 */
import { openDb } from '@/lib/server/platform/db'

const [dataDir] = process.argv.slice(2)
await openDb({ dataDir })
process.stdout.write('ready\n')
setInterval(() => {}, 60_000)
