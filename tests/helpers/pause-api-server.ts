import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Db } from '@/lib/server/platform/db'
import { listPauses } from '@/lib/server/pauses/list-pauses'
import { listPausesQuerySchema } from '@/lib/shared/schemas/pause'

export type PollRequest = { url: URL; headers: IncomingHttpHeaders; at: number }

export type PausesApiOptions = {
  /** The database the list is read from (the test's). */
  db: Db
  /**
   * Answers a poll before Lazarus does: a status (401, 403, 503…) to refuse it with, or null to serve the list. Lets a
   * test play a Lazarus that requires guard tokens (the route's own authentication is tested with the route).
   */
  gate?: (request: PollRequest) => number | null
}

/**
 * Serves GET /api/pauses on a loopback port as the route does after authentication: the query through the route's zod
 * schema, then the list operation (which records the guard's heartbeat). A guard reaches "Lazarus" over HTTP
 * in-process. `requests` counts the list reads (how tests see a guard re-read it); `polls` keeps each one.
 */
export async function servePausesApi(options: PausesApiOptions): Promise<{
  url: string
  requests: () => number
  polls: PollRequest[]
  close(): Promise<void>
}> {
  const polls: PollRequest[] = []
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1')
      if (req.method !== 'GET' || url.pathname !== '/api/pauses') {
        res.writeHead(404).end()
        return
      }
      const poll = { url, headers: req.headers, at: Date.now() }
      polls.push(poll)
      const refused = options.gate?.(poll) ?? null
      if (refused !== null) {
        res.writeHead(refused, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'refused', message: `HTTP ${refused}` } }))
        return
      }
      const parsed = listPausesQuerySchema.safeParse(Object.fromEntries(url.searchParams))
      if (!parsed.success) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'invalid', message: parsed.error.message } }))
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(await listPauses({ db: options.db, ...parsed.data })))
    } catch (error) {
      res.writeHead(500).end(String(error))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => polls.length,
    polls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
