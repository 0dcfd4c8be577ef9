import { expect as baseExpect } from '@playwright/test'
import amqp from 'amqplib'
import { E2E_ADMIN, test } from './support/fixtures'
import { getJson, pollJson } from './support/api-json'
import { sourceQueue } from './support/slots'

/*
 * Links back to Lazarus in tickets and Markdown exports use the address the browser used (defect 6 of issue 16 had
 * them point at localhost whatever it was): LAZARUS_PUBLIC_URL when set (tests/integration/http-front.test.ts), else
 * the request's own Host, once the HTTP front has checked it (lib/server/platform/http/csrf.ts, publicOrigin). The
 * server here has no LAZARUS_PUBLIC_URL, so it answers to loopback names only, and each one gets links of its own.
 */

const expect = baseExpect.configure({ timeout: 15_000 })
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = sourceQueue()
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')

test('tickets and Markdown exports link to the address they were asked through, without escaped slashes', async ({ request, baseURL }) => {
  const connection = await amqp.connect(AMQP_URL)
  try {
    const channel = await connection.createConfirmChannel()
    await channel.assertQueue(DLQ, { durable: true })
    channel.sendToQueue(DLQ, Buffer.from(JSON.stringify({ orderId: RUN })), {
      contentType: 'application/json',
      headers: { 'x-error-type': 'LinkCheckError', 'x-error-message': `links of ${RUN}` },
    })
    await channel.waitForConfirms()
  } finally {
    await connection.close()
  }
  await expect.poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=1`))?.messages?.length, { timeout: 30_000 }).toBe(1)
  const message = (await getJson(request, `/api/messages?q=${RUN}&limit=1`)).messages[0] as { id: string; groupId: string }

  const port = new URL(baseURL!).port
  for (const host of ['127.0.0.1', 'localhost']) {
    const origin = `http://${host}:${port}`
    const get = async (path: string) => {
      const response = await request.get(`${origin}${path}`, { headers: { authorization: `Bearer ${E2E_ADMIN.token}` } })
      expect(response.status(), path).toBe(200)
      return response.text()
    }
    const messageTicket = await get(`/api/messages/${message.id}/ticket`)
    expect(messageTicket).toContain(`[open in Lazarus](<${origin}/messages/${message.id}>)`)
    const groupTicket = await get(`/api/groups/${message.groupId}/ticket`)
    expect(groupTicket).toContain(`<${origin}/groups/${message.groupId}>`)
    const exported = await get(`/api/export?format=md&ids=${message.id}`)
    expect(exported).toContain(`${origin}/messages/${message.id}`)
    for (const markdown of [messageTicket, groupTicket, exported]) {
      expect(markdown).not.toContain('\\/')
      // Only this address: no other loopback name, no bind address.
      expect(markdown.match(/https?:\/\/[^\s)>\]]+/g)!.filter((url) => url.startsWith('http://') && !url.startsWith(origin) && /localhost|127\.0\.0\.1|0\.0\.0\.0/.test(url))).toEqual([])
    }
  }
})
