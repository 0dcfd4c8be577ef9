import 'server-only'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import { hostOf, WebhookRefusedError, type WebhookPolicy } from '@/lib/server/alerts/webhook-policy'

export type WebhookResponse = { ok: boolean; status: number }

/**
 * POSTs `body` to one webhook through a connection the policy vets: a host name is resolved by the policy's own
 * `lookup` (only allowed addresses are ever connected to, on every connection, so a name re-pointed after it was
 * saved is caught), an IP literal is checked before connecting (Node skips `lookup` for literals). Redirects are
 * answers, never followed; each request has its own agent so no pooled socket opened by other code is reused.
 * Throws with the message stored as the delivery's error.
 */
export async function postWebhook({ url, body, headers, timeoutMs, policy }: { url: string; body: string; headers: Record<string, string>; timeoutMs: number; policy: WebhookPolicy }): Promise<WebhookResponse> {
  const target = new URL(url)
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new WebhookRefusedError('refused: not an http(s) URL')
  if (target.username || target.password) throw new WebhookRefusedError('refused: the URL contains a user name or password')
  const host = hostOf(target)
  if (net.isIP(host)) {
    const refusal = policy.refusal(host, host)
    if (refusal) throw new WebhookRefusedError(refusal)
  }
  const signal = AbortSignal.timeout(timeoutMs)
  const request = target.protocol === 'https:' ? https.request : http.request
  return new Promise<WebhookResponse>((resolve, reject) => {
    const req = request(
      {
        method: 'POST',
        host,
        port: target.port || undefined,
        path: `${target.pathname}${target.search}`,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: policy.lookup,
        agent: false,
        signal,
      },
      (response) => {
        // The answer's body is of no interest; draining it lets the socket close.
        response.resume()
        const status = response.statusCode ?? 0
        resolve({ ok: status >= 200 && status < 300, status })
      },
    )
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error instanceof WebhookRefusedError) reject(error)
      else if (signal.aborted) reject(new Error(`timed out after ${timeoutMs / 1000} s`))
      else reject(new Error(`connection failed${error.code ? ` (${error.code})` : ''}`))
    })
    req.end(body)
  })
}
