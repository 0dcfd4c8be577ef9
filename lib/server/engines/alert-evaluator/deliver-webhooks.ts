import 'server-only'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import { postWebhook } from './post-webhook'
import type { WebhookPolicy } from '@/lib/server/alerts/webhook-policy'

export type Delivery = AlertEventDto['delivery'][number]

/**
 * POSTs one notification to each webhook: `{text, alert, alerts}`, where `text` is what Slack-compatible receivers
 * show and `alerts` every alert of a digest (webhookPayload). `policy` decides, on each connection, which addresses
 * may be reached (loadWebhookPolicy).
 */
export async function deliverWebhooks({ urls, text, alert, alerts = [alert], policy, timeoutMs = 5_000 }: {
  urls: string[]
  text: string
  alert: AlertEventDto
  alerts?: AlertEventDto[]
  policy: WebhookPolicy
  timeoutMs?: number
}): Promise<Delivery[]> {
  return Promise.all(urls.map((url) => sendWebhook({ url, body: JSON.stringify({ text, alert, alerts }), policy, timeoutMs })))
}

/** POSTs one JSON body to one webhook; never throws: a refusal, a timeout or a non-2xx answer is a failed delivery. */
export async function sendWebhook({ url, body, policy, timeoutMs = 5_000 }: { url: string; body: string; policy: WebhookPolicy; timeoutMs?: number }): Promise<Delivery> {
  try {
    const response = await postWebhook({ url, policy, headers: { 'content-type': 'application/json', 'user-agent': 'lazarus-alerts' }, body, timeoutMs })
    return { url, ok: response.ok, status: response.status, error: response.ok ? null : `HTTP ${response.status}` }
  } catch (error) {
    return { url, ok: false, status: null, error: (error as Error).message }
  }
}
