import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export type WebhookReceiver = {
  url: string
  /** Every request's JSON body, in arrival order, with the status it was answered with. */
  requests: { status: number; body: any }[]
  /** The same requests' JSON bodies alone. */
  bodies: any[]
  /** The status the next requests are answered with (200 unless set). */
  answer: number
  close(): Promise<void>
}

/**
 * A real HTTP endpoint on localhost that records the alert webhooks Lazarus posts to it. Loopback is refused to
 * webhooks unless allow-listed, so a test using it allows `host` (/api/settings/webhooks or
 * LAZARUS_WEBHOOK_ALLOWED_HOSTS); another loopback address (127.0.0.2, ::1) gives a second, differently allowed one.
 */
export async function startWebhookReceiver(host = '127.0.0.1'): Promise<WebhookReceiver> {
  const receiver: Omit<WebhookReceiver, 'url' | 'close'> = { requests: [], bodies: [], answer: 200 }
  const server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk) => (body += chunk))
    request.on('end', () => {
      const status = receiver.answer
      const parsed = JSON.parse(body)
      receiver.requests.push({ status, body: parsed })
      receiver.bodies.push(parsed)
      response.writeHead(status).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  return Object.assign(receiver, {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  })
}
