import { afterEach, describe, expect, it } from 'vitest'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gracefulCloser } from '@/lib/server/platform/http/close-gracefully'

/** The web process's SIGTERM (lib/cli/serve.ts): what is in flight is answered, nothing new is taken. */
describe('gracefulCloser', () => {
  let server: Server | undefined
  afterEach(() => {
    server?.closeAllConnections()
    server?.close()
  })

  /** A server whose responses wait until the test lets them go. */
  async function slowServer() {
    const waiting: (() => void)[] = []
    server = createServer((req, res) => {
      if (closer.closing()) res.setHeader('connection', 'close')
      waiting.push(() => res.end('done'))
    })
    const closer = gracefulCloser(server)
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as AddressInfo).port
    const get = () =>
      new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
        request({ port, host: '127.0.0.1', path: '/', agent: false }, (res) => {
          let body = ''
          res.on('data', (chunk) => (body += chunk))
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }))
        })
          .on('error', reject)
          .end()
      })
    return { closer, waiting, get }
  }

  it('answers the request in flight, with Connection: close, refuses new connections, and resolves when done', async () => {
    const { closer, waiting, get } = await slowServer()
    const inFlight = get()
    await expect.poll(() => waiting.length).toBe(1)

    let closed = false
    const closing = closer.close(10_000).then(() => (closed = true))
    expect(closer.closing()).toBe(true)
    await expect(get()).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    expect(closed).toBe(false)

    waiting[0]()
    expect(await inFlight).toEqual({ status: 200, connection: 'close', body: 'done' })
    await closing
    expect(closed).toBe(true)
  })

  it('cuts what is still open after the grace period', async () => {
    const { closer, waiting, get } = await slowServer()
    const inFlight = get()
    await expect.poll(() => waiting.length).toBe(1)
    await closer.close(50)
    await expect(inFlight).rejects.toMatchObject({ code: 'ECONNRESET' })
  })
})
