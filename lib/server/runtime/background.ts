import 'server-only'
import { getConfig } from '@/lib/server/config'
import { getDb } from '@/lib/server/db'
import { startDrainer, type Drainer } from '@/lib/server/drainer/drainer'
import { logger } from '@/lib/server/log'
import { ensureSources } from '@/lib/server/sources/create-source'

const log = logger('runtime')
const globalForRuntime = globalThis as unknown as { lazarusBackground?: Promise<Background> }

export type Background = { drainer: Drainer; stop(): Promise<void> }

async function start(): Promise<Background> {
  const config = getConfig()
  const db = await getDb()
  await ensureSources(config.LAZARUS_SOURCES)
  const drainer = startDrainer({ sql: db.sql, config })
  log.info('background workers started', { sources: config.LAZARUS_SOURCES.join(',') || '(from database)' })
  return {
    drainer,
    async stop() {
      await drainer.stop()
    },
  }
}

/** Starts the drainer (and later the replay executor) once per process; a second call returns the same handle. */
export function startBackground(): Promise<Background> {
  globalForRuntime.lazarusBackground ??= start().catch((error) => {
    globalForRuntime.lazarusBackground = undefined
    throw error
  })
  return globalForRuntime.lazarusBackground
}

/** The running background workers of this process, if any (the web process may run without them). */
export async function currentBackground(): Promise<Background | null> {
  return (await globalForRuntime.lazarusBackground?.catch(() => null)) ?? null
}

/** Stops gracefully on SIGINT/SIGTERM: consumers stop, held batches are written and acked, then exit. */
export function installShutdown(extra?: () => Promise<void>): void {
  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info('shutting down', { signal })
    const background = await currentBackground()
    await Promise.race([
      (async () => {
        await background?.stop()
        await extra?.()
        await (await getDb()).close()
      })(),
      new Promise((resolve) => setTimeout(resolve, 15_000)),
    ]).catch((error) => log.error('shutdown error', { error: (error as Error).message }))
    process.exit(0)
  }
  process.once('SIGINT', () => void shutdown('SIGINT'))
  process.once('SIGTERM', () => void shutdown('SIGTERM'))
}
