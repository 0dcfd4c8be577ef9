import { Badge, type Tone } from '@/components/ui/badge'
import { formatCount, visibleText } from '@/lib/client/format'
import type { SelectionInput } from '@/lib/client/use-replays'
import type { ExclusionReason, ReplayJobDto, ReplayTarget } from '@/lib/shared/schemas/replay'
import { describeFieldFilter, type FieldCondition } from '@/lib/shared/schemas/field-filter'
import type { Selection } from '@/lib/shared/schemas/selection'

/** Why a message of the selection will not be published, in the operator's words. */
export const EXCLUSION_LABELS: Record<ExclusionReason, string> = {
  'not-dead': 'not dead: already replaying, replayed, resolved or held',
  'replay-cap': 'replay cap reached: replayed too often already',
  'too-large': 'body larger than the replay size limit',
  'headers-too-large': 'headers too large to publish',
  'no-origin': 'original exchange unknown (choose the failed queue or a custom target), or a JetStream message its stream removed before capture',
  'unknown-source': 'its source no longer exists',
  jetstream: 'a JetStream message, and LAZARUS_NATS_URL is not set: nothing to publish it with',
  'target-refused': 'target not allowed: an amq.* or Lazarus exchange, another queue than the one it failed in, a NATS server subject, or a subject off the allow-list',
  superseded: 'superseded: a newer version of its entity is in the selection (resolved, not published)',
}

export const exclusionLabel = (reason: string) => EXCLUSION_LABELS[reason as ExclusionReason] ?? visibleText(reason)

/** `broker`: 'jetstream' when every message of the job is a JetStream one, whose copies go to subjects (docs/jetstream.md#replay). */
export function targetText(target: ReplayTarget | undefined | null, broker: 'rabbitmq' | 'jetstream' = 'rabbitmq'): string {
  if (!target) return '—'
  if (broker === 'jetstream') return target.type === 'custom' ? `subject ${visibleText(target.routingKey) || '(empty)'}` : 'original subject, through JetStream'
  if (target.type === 'source') return 'source exchange, original routing key'
  if (target.type === 'queue') return 'failed queue only'
  return `${visibleText(target.exchange) || '(default exchange)'} → ${visibleText(target.routingKey) || '(empty key)'}`
}

export function exchangeText(exchange: string | null | undefined): string {
  if (exchange === null || exchange === undefined) return '—'
  return exchange === '' ? '(default exchange)' : visibleText(exchange)
}

/**
 * Where a replayed copy went: "orders → order.created", "(default exchange) → orders.work", "subject orders.created"
 * (a JetStream copy: no exchange, its subject as the key), "—" when not yet known.
 */
export function publishedToText(exchange: string | null, routingKey: string | null): string {
  if (exchange === null) return routingKey === null ? '—' : `subject ${visibleText(routingKey)}`
  return `${exchangeText(exchange)}${routingKey !== null ? ` → ${visibleText(routingKey) || '(empty)'}` : ''}`
}

/**
 * The route of a replayed copy in a table cell. Through the default exchange the routing key is the queue, so it reads
 * "queue orders.work": the name first, which a narrow column still shows. The full route is the cell's title.
 */
export function PublishedTo({ exchange, routingKey }: { exchange: string | null; routingKey: string | null }) {
  if (exchange === null && routingKey !== null) {
    return (
      <>
        <span className="font-sans text-zinc-400">subject</span> {visibleText(routingKey)}
      </>
    )
  }
  if (exchange === '' && routingKey) {
    return (
      <>
        <span className="font-sans text-zinc-400">queue</span> {visibleText(routingKey)}
      </>
    )
  }
  return <>{publishedToText(exchange, routingKey)}</>
}

export function selectionText(selection: Selection | SelectionInput | undefined | null): string {
  if (!selection) return '—'
  if ('ids' in selection) return selection.ids.length === 1 ? `message #${selection.ids[0]}` : `${formatCount(selection.ids.length)} selected messages`
  const since =
    ('arrivedAfter' in selection && selection.arrivedAfter ? ` arrived after ${selection.arrivedAfter}` : '') +
    ('notCopiesOf' in selection && selection.notCopiesOf ? `, not #${selection.notCopiesOf}'s own copies` : '')
  if ('groupId' in selection) return `group #${selection.groupId}${since}`
  // A stored selection holds its field filters as `match`; one being made holds them as parameters (field-filter.ts).
  const parts = Object.entries(selection.filter as Record<string, unknown>).flatMap(([k, v]) =>
    k === 'match' && Array.isArray(v) ? (v as FieldCondition[]).map((c) => visibleText(describeFieldFilter(c))) : [`${k}=${visibleText(String(v))}`],
  )
  return (parts.length ? `filter ${parts.join(' ')}` : 'every stored message') + since
}

/** "12 s", "3 min 20 s", "1 h 5 min". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—'
  const s = Math.max(0, Math.round(seconds))
  if (s < 1) return 'under 1 s'
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`
  const h = Math.floor(s / 3600)
  const m = Math.round((s % 3600) / 60)
  return `${h} h${m ? ` ${m} min` : ''}`
}

const JOB_TONES: Record<string, Tone> = {
  awaiting_approval: 'violet', scheduled: 'sky', pending: 'zinc', running: 'blue', halted: 'red', completed: 'green', cancelled: 'amber', failed: 'red', rejected: 'red', expired: 'amber',
}
const ITEM_TONES: Record<string, Tone> = {
  pending: 'zinc',
  in_flight: 'blue',
  confirmed: 'green',
  unroutable: 'orange',
  failed: 'red',
  skipped: 'zinc',
  cancelled: 'amber',
}

export function JobStatusBadge({ status, cancelRequested }: { status: ReplayJobDto['status']; cancelRequested?: boolean }) {
  if (cancelRequested && (status === 'pending' || status === 'running')) return <Badge tone="amber">cancelling</Badge>
  return <Badge tone={JOB_TONES[status] ?? 'zinc'}>{status === 'awaiting_approval' ? 'awaiting approval' : status}</Badge>
}

export function ItemStatusBadge({ status }: { status: string }) {
  return <Badge tone={ITEM_TONES[status] ?? 'zinc'}>{status.replace('_', ' ')}</Badge>
}

