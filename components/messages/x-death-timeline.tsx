import { Badge } from '@/components/ui/badge'
import { ClampedText } from '@/components/ui/clamped-text'
import { AbsoluteTime } from '@/components/ui/time'
import { visibleText } from '@/lib/client/format'
import type { XDeathDto } from '@/lib/shared/schemas/message'

/** The x-death history, most recent first as RabbitMQ keeps it: where the message died, why and how often. */
export function XDeathTimeline({ entries, broker = 'rabbitmq' }: { entries: XDeathDto[]; broker?: 'rabbitmq' | 'jetstream' }) {
  if (entries.length === 0 && broker === 'jetstream') {
    return <p className="text-zinc-500">JetStream keeps no x-death: this failure was captured from the consumer&apos;s advisory (its deliveries and stream sequence are in the properties).</p>
  }
  if (entries.length === 0) return <p className="text-zinc-500">No x-death header: the message was not dead-lettered by the broker.</p>
  return (
    <ol className="relative space-y-3 border-l border-zinc-200 pl-4">
      {entries.map((e, i) => (
        <li key={i} className="relative min-w-0">
          <span aria-hidden className="absolute top-1.5 -left-[21px] size-2.5 rounded-full border-2 border-white bg-red-400 ring-1 ring-red-200" />
          <div className="flex flex-wrap items-center gap-x-2 gap-y-0.5">
            <ClampedText className="min-w-0 font-mono text-xs font-medium break-all text-zinc-900" limit={120} text={visibleText(e.queue ?? '(unknown queue)')} />
            {e.reason && <Badge tone={e.reason === 'rejected' ? 'red' : e.reason === 'expired' ? 'sky' : 'violet'}>{visibleText(e.reason)}</Badge>}
            {e.count !== null && <span className="text-xs text-zinc-600 tabular-nums">×{e.count}</span>}
            <AbsoluteTime iso={e.time} className="ml-auto text-xs text-zinc-500 tabular-nums" />
          </div>
          <p className="mt-0.5 text-xs break-all text-zinc-600">
            exchange <ClampedText className="font-mono text-zinc-800" limit={120} text={e.exchange === '' ? '(default)' : visibleText(e.exchange ?? '—')} />
            {' · '}routing keys <ClampedText className="font-mono text-zinc-800" limit={160} text={e.routingKeys.length ? e.routingKeys.map(visibleText).join(', ') : '—'} />
          </p>
        </li>
      ))}
    </ol>
  )
}
