import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import * as pausesRoute from '@/app/api/pauses/route'

/**
 * Serves GET /api/pauses from the real route handler on a loopback port, so a guard can reach "Lazarus" over
 * HTTP in-process. `requests` counts the list reads (how tests see a guard re-read it).
 */
export async function servePausesApi(): Promise<{ url: string; requests: () => number; close(): Promise<void> }> {
  let requests = 0
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1')
      if (req.method !== 'GET' || url.pathname !== '/api/pauses') {
        res.writeHead(404).end()
        return
      }
      requests++
      const response = await pausesRoute.GET(new Request(url), { params: Promise.resolve({}) })
      res.writeHead(response.status, { 'content-type': response.headers.get('content-type') ?? 'application/json' })
      res.end(Buffer.from(await response.arrayBuffer()))
    } catch (error) {
      res.writeHead(500).end(String(error))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
