import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { callRoute, type HttpMethod, type RouteModule } from './call-route'

/** One request a route server answered: what came in, and what the route answered. */
export type RouteExchange = {
  method: string
  path: string
  query: Record<string, string>
  headers: IncomingHttpHeaders
  /** The request body, parsed as JSON when it is JSON. */
  body: unknown
  status: number
  /** The answer, parsed as JSON when it is JSON. */
  answer: unknown
}

export type RouteServer = { url: string; exchanges: RouteExchange[]; close(): Promise<void> }

const parsed = (text: string): unknown => {
  try {
    return text === '' ? undefined : JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * Lazarus' HTTP API as an application reaches it: the real route modules (authentication, permission, schema and
 * operation) behind a loopback server, keyed by path. Requests go in as they came, without the tests' admin
 * credential; `exchanges` keeps each request with its answer.
 */
export async function serveRoutes(routes: Record<string, RouteModule>): Promise<RouteServer> {
  const exchanges: RouteExchange[] = []
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1')
    const target = routes[url.pathname]
    if (!target) return void res.writeHead(404).end()
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks)
    const headers = new Headers()
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value)
    const method = (req.method ?? 'GET') as HttpMethod
    const request = new Request(`http://lazarus.test${url.pathname}${url.search}`, { method, headers, body: method === 'GET' || method === 'HEAD' ? undefined : body })
    const response = await callRoute(target, method, request, {}, { anonymous: true })
    const answer = await response.text()
    exchanges.push({
      method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body: parsed(body.toString('utf8')), status: response.status, answer: parsed(answer),
    })
    res.writeHead(response.status, { 'content-type': response.headers.get('content-type') ?? 'application/json' }).end(answer)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
