import { once } from 'node:events'
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as health from '@/app/api/health/route'
import * as session from '@/app/api/auth/session/route'
import * as sources from '@/app/api/sources/route'
import { createFront } from '@/lib/server/platform/http/front'
import { REVISIONS_PATH } from '@/lib/server/messages/revision-request-limit'
import { createTestDb, type TestDb } from '../helpers/test-db'
import type { RouteModule } from '../helpers/call-route'

/*
 * Lazarus' HTTP front (lib/server/platform/http/front.ts) over real sockets, in front of the real route handlers (a small adapter
 * stands in for Next.js): every header a client could forge, the Host check, the body limit and the security headers.
 * Proxy sign-in is trusted from 127.0.0.2 only; the tests connect from 127.0.0.1 (untrusted) or bind 127.0.0.2.
 */

process.env.LAZARUS_TRUSTED_PROXIES = '127.0.0.2'
process.env.LAZARUS_GROUP_ROLES = 'sre=operator; billing-team=operator:billing.*; cn=admins,ou=groups=admin'
process.env.LAZARUS_PUBLIC_URL = 'http://lazarus.example.com:3000'

const ROUTES: Record<string, RouteModule> = { '/api/health': health, '/api/auth/session': session, '/api/sources': sources }

/** What Next.js does for a route: build a web Request from the socket's request and write the Response back. */
async function toRoutes(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]
  if (path === '/own-csp') {
    // As the raw body download does: a response with its own, stricter policy keeps it.
    res.writeHead(200, { 'content-security-policy': "default-src 'none'; sandbox", 'content-type': 'application/octet-stream' })
    res.end('raw')
    return
  }
  if (path === '/echo') {
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify(req.headers))
    return
  }
  const routeModule = ROUTES[path]
  const handler = routeModule?.[req.method ?? 'GET'] as ((r: Request, c: { params: Promise<object> }) => Promise<Response>) | undefined
  if (!handler) {
    res.statusCode = 404
    res.end('not found')
    return
  }
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value)
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
  const request = new Request(`http://internal${req.url}`, {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
    ...(hasBody ? { duplex: 'half' } : {}),
  } as RequestInit)
  const response = await handler(request, { params: Promise.resolve({}) })
  res.statusCode = response.status
  response.headers.forEach((value, name) => res.setHeader(name, value))
  res.end(Buffer.from(await response.arrayBuffer()))
}

type Reply = { status: number; headers: Record<string, string | string[] | undefined>; body: string }

function send(port: number, options: { path: string; method?: string; headers?: Record<string, string>; body?: string | Buffer; localAddress?: string; chunked?: boolean }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path: options.path, method: options.method ?? 'GET', headers: { host: '127.0.0.1', ...options.headers }, localAddress: options.localAddress, agent: false },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
      },
    )
    req.on('error', reject)
    if (options.body !== undefined) {
      if (options.chunked) {
        // Without a Content-Length: Node sends it chunked, as a client hiding the size would.
        const body = Buffer.from(options.body)
        for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.subarray(i, i + 64 * 1024))
      } else req.write(options.body)
    }
    req.end()
  })
}

describe('the HTTP front', () => {
  let db: TestDb
  let server: Server
  let port: number

  beforeAll(async () => {
    db = await createTestDb()
    server = createServer(
      createFront(toRoutes, {
        publicUrl: process.env.LAZARUS_PUBLIC_URL,
        trustedProxies: ['127.0.0.2'],
        identityHeaders: ['x-forwarded-email', 'x-forwarded-groups'],
        maxBodyBytes: 1024 * 1024,
        largeBodyRoutes: [{ path: REVISIONS_PATH, maxBytes: 4 * 1024 * 1024 }],
        dev: false,
      }),
    )
    server.listen(0, '0.0.0.0')
    await once(server, 'listening')
    port = (server.address() as AddressInfo).port
  })
  afterAll(async () => {
    server?.close()
    await db?.drop()
  })

  it('drops every forwarded and identity header an untrusted client sends, and its own markers', async () => {
    const forged = {
      'x-forwarded-for': '10.9.9.9',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-proto': 'https',
      'x-forwarded-email': 'admin@lazarus.test',
      'x-forwarded-groups': 'sre',
      forwarded: 'for=10.9.9.9;proto=https',
      'x-real-ip': '10.9.9.9',
      'x-request-id': 'forged-by-the-client',
      'x-lazarus-peer': '127.0.0.2',
      'x-lazarus-trusted-proxy': '1',
      'x-lazarus-host-ok': '1',
      'content-security-policy': "script-src 'unsafe-inline'",
    }
    const echoed = JSON.parse((await send(port, { path: '/echo', headers: forged })).body) as Record<string, string>
    for (const name of ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-email', 'x-forwarded-groups', 'forwarded', 'x-real-ip', 'x-request-id']) {
      expect(echoed[name], name).toBeUndefined()
    }
    expect(echoed['x-lazarus-peer']).toBe('127.0.0.1')
    expect(echoed['x-lazarus-trusted-proxy']).toBe('0')
    expect(echoed['content-security-policy']).toMatch(/'nonce-[A-Za-z0-9+/=]+'/)
    expect(echoed['content-security-policy']).not.toMatch(/script-src[^;]*unsafe-inline/)
  })

  it('a forged proxy identity signs nobody in', async () => {
    const reply = await send(port, { path: '/api/sources', headers: { 'x-forwarded-email': 'admin@lazarus.test', 'x-forwarded-groups': 'cn=admins,ou=groups' } })
    expect(reply.status).toBe(401)
    const who = JSON.parse((await send(port, { path: '/api/auth/session', headers: { 'x-forwarded-email': 'admin@lazarus.test' } })).body)
    expect(who.signedIn).toBe(false)
  })

  it('a trusted proxy signs its user in with the roles its groups map to', async () => {
    const from = { localAddress: '127.0.0.2' }
    const operator = JSON.parse(
      (await send(port, { path: '/api/auth/session', headers: { 'x-forwarded-email': 'sam@lazarus.test', 'x-forwarded-groups': 'sre, staff' }, ...from })).body,
    )
    expect(operator).toMatchObject({ signedIn: true, user: { email: 'sam@lazarus.test', via: 'proxy' }, roles: [{ role: 'operator', sourcePattern: null }] })
    const scoped = JSON.parse((await send(port, { path: '/api/auth/session', headers: { 'x-forwarded-email': 'bo@lazarus.test', 'x-forwarded-groups': 'billing-team' }, ...from })).body)
    expect(scoped.roles).toEqual([{ role: 'operator', sourcePattern: 'billing.*' }])
    // A group name with commas and '=' (an LDAP DN) maps too; the proxy sends groups comma-separated, so it arrives split.
    const none = JSON.parse((await send(port, { path: '/api/auth/session', headers: { 'x-forwarded-email': 'nobody@lazarus.test', 'x-forwarded-groups': 'staff' }, ...from })).body)
    expect(none).toMatchObject({ signedIn: true, roles: [] })
    expect((await send(port, { path: '/api/sources', headers: { 'x-forwarded-email': 'nobody@lazarus.test' }, ...from })).status).toBe(403)
    expect((await send(port, { path: '/api/sources', headers: { 'x-forwarded-email': 'sam@lazarus.test', 'x-forwarded-groups': 'sre' }, ...from })).status).toBe(200)
  })

  it("answers with the request's id: a trusted proxy's X-Request-Id is kept, anyone else's replaced by a fresh one", async () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
    const forged = await send(port, { path: '/api/sources', headers: { 'x-request-id': 'forged-by-the-client' } })
    expect(forged.status).toBe(401)
    expect(forged.headers['x-request-id']).toMatch(uuid)
    const proxied = await send(port, { path: '/api/health', headers: { 'x-request-id': 'edge-7f3a/1=' }, localAddress: '127.0.0.2' })
    expect(proxied.headers['x-request-id']).toBe('edge-7f3a/1=')
    // What the proxy sends goes into headers, log lines and the audit log as it came: anything unusual is replaced.
    for (const odd of ['has space', 'x'.repeat(129), 'quote"d']) {
      const replaced = await send(port, { path: '/api/health', headers: { 'x-request-id': odd }, localAddress: '127.0.0.2' })
      expect(replaced.headers['x-request-id']).toMatch(uuid)
    }
  })

  it('answers only its own Host: another name gets 421, the health probe gets its bare status', async () => {
    const rebind = await send(port, { path: '/api/sources', headers: { host: 'rebind.attacker.example:3000' } })
    expect(rebind.status).toBe(421)
    expect(JSON.parse(rebind.body).error.code).toBe('misdirected')
    const probe = await send(port, { path: '/api/health', headers: { host: 'rebind.attacker.example:3000' } })
    expect(probe.status).toBe(200)
    expect(Object.keys(JSON.parse(probe.body))).toEqual(['status'])
    expect((await send(port, { path: '/api/sources', headers: { host: 'lazarus.example.com:3000' } })).status).toBe(401)
    expect((await send(port, { path: '/api/sources', headers: { host: 'localhost:3000' } })).status).toBe(401)
    expect((await send(port, { path: '/api/sources', headers: { host: 'lazarus.example.com:3001' } })).status).toBe(421)
  })

  it('refuses a body declared larger than 1 MiB before reading it, and a chunked one once it passes the limit', async () => {
    const big = Buffer.alloc(1024 * 1024 + 1, 0x20)
    const declared = await send(port, { path: '/api/sources', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(big.length), origin: 'http://lazarus.example.com:3000' }, body: big })
    expect(declared.status).toBe(413)
    expect(declared.headers.connection).toBe('close')
    // Chunked: the front cannot know the size; the route stops reading at the limit (as admin: a bearer skips CSRF).
    const chunked = await send(port, {
      path: '/api/sources',
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.LAZARUS_ADMIN_TOKEN}`, 'transfer-encoding': 'chunked' },
      body: Buffer.concat([Buffer.from('{"queue":"'), Buffer.alloc(2 * 1024 * 1024, 0x61), Buffer.from('"}')]),
      chunked: true,
    })
    expect(chunked.status).toBe(413)
    expect(JSON.parse(chunked.body).error.code).toBe('too_large')
  })

  it('lets a message body replacement through up to its own, larger limit, and no other route', async () => {
    const upload = Buffer.alloc(2 * 1024 * 1024, 0x61)
    const headers = { 'content-type': 'application/octet-stream', 'content-length': String(upload.length) }
    // Past the front (no route answers /api/messages/1/revisions in this harness: 404, not 413).
    expect((await send(port, { path: '/api/messages/1/revisions', method: 'POST', headers, body: upload })).status).toBe(404)
    expect((await send(port, { path: '/api/messages/1/revisions/extra', method: 'POST', headers, body: upload })).status).toBe(413)
    const over = Buffer.alloc(4 * 1024 * 1024 + 1, 0x61)
    expect((await send(port, { path: '/api/messages/1/revisions', method: 'POST', headers: { ...headers, 'content-length': String(over.length) }, body: over })).status).toBe(413)
  })

  it('sets the security headers on every response, refusals included', async () => {
    for (const reply of [await send(port, { path: '/api/health' }), await send(port, { path: '/nowhere' }), await send(port, { path: '/api/sources', headers: { host: 'evil.example' } })]) {
      const csp = String(reply.headers['content-security-policy'])
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp).toMatch(/script-src 'self' 'nonce-[^']+' 'strict-dynamic'(;|$)/)
      expect(reply.headers['x-content-type-options']).toBe('nosniff')
      expect(reply.headers['x-frame-options']).toBe('DENY')
      expect(reply.headers['referrer-policy']).toBe('same-origin')
      // HSTS only when the public URL is HTTPS (it is http here).
      expect(reply.headers['strict-transport-security']).toBeUndefined()
    }
  })

  it('a response that sets its own Content-Security-Policy keeps it; the other headers are still added', async () => {
    const reply = await send(port, { path: '/own-csp' })
    expect(reply.headers['content-security-policy']).toBe("default-src 'none'; sandbox")
    expect(reply.headers['x-frame-options']).toBe('DENY')
  })

  it('cross-site changes are refused: no JSON content type, or another Origin', async () => {
    const textPlain = await send(port, { path: '/api/sources', method: 'POST', headers: { 'content-type': 'text/plain', origin: 'http://lazarus.example.com:3000', host: 'lazarus.example.com:3000' }, body: '{"queue":"x"}' })
    expect(textPlain.status).toBe(403)
    expect(JSON.parse(textPlain.body).error.details.reason).toBe('csrf')
    const otherOrigin = await send(port, { path: '/api/sources', method: 'POST', headers: { 'content-type': 'application/json', origin: 'http://127.0.0.1:8999', host: 'lazarus.example.com:3000' }, body: '{"queue":"x"}' })
    expect(otherOrigin.status).toBe(403)
    expect(JSON.parse(otherOrigin.body).error.details.reason).toBe('csrf')
  })
})
