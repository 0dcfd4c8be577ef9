import { route } from '@/lib/server/platform/http/handle-route'
import { renderMetrics } from '@/lib/server/metrics/render-metrics'

export const dynamic = 'force-dynamic'

// GET /api/metrics – Prometheus text exposition: ingested, replay outcomes, dead per group, DLQ depth, drain lag
export const GET = route({ permission: 'metrics' }, async ({ db, root }) => {
  const { contentType, body } = await renderMetrics({ db, processMetrics: root.processMetrics() })
  return new Response(body, { headers: { 'content-type': contentType, 'cache-control': 'no-store' } })
})
