import 'server-only'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'

export type Delivery = AlertEventDto['delivery'][number]

/** POSTs one alert to each webhook: `{text, alert}`, where `text` is what Slack-compatible receivers show. */
export async function deliverWebhooks({ urls, text, alert, timeoutMs = 5_000 }: { urls: string[]; text: string; alert: AlertEventDto; timeoutMs?: number }): Promise<Delivery[]> {
  return Promise.all(
    urls.map(async (url): Promise<Delivery> => {
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'lazarus-alerts' },
          body: JSON.stringify({ text, alert }),
          signal: AbortSignal.timeout(timeoutMs),
          redirect: 'error',
        })
        await response.body?.cancel().catch(() => {})
        return { url, ok: response.ok, status: response.status, error: response.ok ? null : `HTTP ${response.status}` }
      } catch (error) {
        return { url, ok: false, status: null, error: (error as Error).message }
      }
    }),
  )
}
