/**
 * The browser tests run in several Playwright workers, each against its own Lazarus: its own port, database, DLQ and
 * pause exchange and queue (playwright.config.ts starts them all through tests/e2e/serve.sh). A spec never sees another
 * worker's messages, settings or sign-ins; slot 0 keeps the names a single server always had (E2E_PORT, E2E_DB,
 * E2E_SOURCES), so `E2E_WORKERS=1` runs everything as before.
 */
export type E2eSlot = {
  index: number
  port: number
  url: string
  database: string
  /** The queues this server drains; the first is the DLQ the specs dead-letter into. */
  sources: string[]
  /** This server's pause exchange and hold queue (slot 0: the defaults, lazarus.control and lazarus.hold). */
  controlExchange: string
  holdQueue: string
  /** Where the setup project leaves the admin's signed-in browser state for this server. */
  adminState: string
}

export const E2E_WORKERS = Math.max(1, Number(process.env.E2E_WORKERS ?? 2))

export function e2eSlot(index: number): E2eSlot {
  const port = Number(process.env.E2E_PORT ?? 3100) + index
  const suffix = (name: string) => (index === 0 ? name : name.endsWith('.dlq') ? `${name.slice(0, -4)}.w${index}.dlq` : `${name}.w${index}`)
  return {
    index,
    port,
    url: `http://127.0.0.1:${port}`,
    database: index === 0 ? (process.env.E2E_DB ?? 'lazarus_e2e') : `${process.env.E2E_DB ?? 'lazarus_e2e'}_w${index}`,
    sources: (process.env.E2E_SOURCES ?? 'e2e.dlq').split(',').map(suffix),
    controlExchange: suffix('lazarus.control'),
    holdQueue: suffix('lazarus.hold'),
    adminState: `test-results/.auth/admin${index === 0 ? '' : `-w${index}`}.json`,
  }
}

/** This worker's server: Playwright numbers its workers' slots 0…workers-1 (TEST_PARALLEL_INDEX). */
export function currentSlot(): E2eSlot {
  return e2eSlot(Number(process.env.TEST_PARALLEL_INDEX ?? 0))
}

/** The DLQ this worker's server drains. */
export const sourceQueue = (): string => currentSlot().sources[0]!
