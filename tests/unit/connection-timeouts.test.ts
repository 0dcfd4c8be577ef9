import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applyConnectionTimeouts, KEEP_ALIVE_MS } from '@/lib/server/platform/http/connection-timeouts'

describe('the HTTP server’s connection timeouts', () => {
  const server = createServer((_req, res) => res.end('ok'))
  beforeAll(async () => {
    applyConnectionTimeouts(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  })
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())))

  it('keeps idle connections longer than the proxies in front do, and tells clients so', async () => {
    expect(KEEP_ALIVE_MS).toBeGreaterThan(60_000)
    const { port } = server.address() as AddressInfo
    const keepAlive = await new Promise<string | undefined>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', headers: { connection: 'keep-alive' } }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.headers['keep-alive'] as string | undefined))
      })
      req.on('error', reject)
      req.end()
    })
    expect(keepAlive).toBe(`timeout=${KEEP_ALIVE_MS / 1000}`)
  })

  it('still bounds how long a client may take to send its headers and its request', () => {
    expect(server.headersTimeout).toBeGreaterThan(server.keepAliveTimeout)
    expect(server.headersTimeout).toBeLessThanOrEqual(70_000)
    expect(server.requestTimeout).toBe(5 * 60_000)
  })
})
