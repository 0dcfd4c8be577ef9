import { Badge } from '@/components/ui/badge'
import { visibleText } from '@/lib/client/format'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'

const SHOWN = 3

/** Whether an event was sent, and how each webhook answered (the URL and error are in the title). */
export function DeliverySummary({ event }: { event: AlertEventDto }) {
  if (!event.notified) {
    return <span className="text-xs text-zinc-500">{event.state === 'recovered' ? 'no · recoveries are not sent' : 'no · within cool-down'}</span>
  }
  if (event.delivery.length === 0) return <span className="text-xs text-zinc-500">yes · no webhook</span>
  const ok = event.delivery.filter((d) => d.ok).length
  return (
    <span className="flex min-w-0 items-center gap-1 overflow-hidden" data-testid="delivery">
      <span className="shrink-0 text-xs text-zinc-700">yes</span>
      {event.delivery.slice(0, SHOWN).map((d, i) => {
        const title = `${visibleText(d.url)}: ${d.ok ? `delivered (HTTP ${d.status})` : visibleText(d.error ?? 'failed')}`
        return (
          <Badge key={`${i}:${d.url}`} tone={d.ok ? 'green' : 'red'} title={title} className="shrink-0">
            {d.ok ? (d.status ?? 'ok') : d.status ? `HTTP ${d.status}` : 'failed'}
          </Badge>
        )
      })}
      {event.delivery.length > SHOWN && <span className="shrink-0 text-xs text-zinc-500">+{event.delivery.length - SHOWN}</span>}
      <span className="sr-only">
        {ok} of {event.delivery.length} webhooks accepted it
      </span>
    </span>
  )
}
