import Link from 'next/link'
import { Badge, type Tone } from '@/components/ui/badge'
import { formatRate, visibleText } from '@/lib/client/format'
import type { AlertEventDto, AlertRuleDto } from '@/lib/shared/schemas/alert'

export const KIND_LABELS: Record<AlertRuleDto['kind'], string> = {
  'source-rate': 'source rate',
  'group-rate': 'group rate',
  'new-group': 'new group',
  'new-finding': 'new topology finding',
  'replay-halted': 'replay halted',
}

const KIND_TONES: Record<AlertRuleDto['kind'], Tone> = { 'source-rate': 'blue', 'group-rate': 'violet', 'new-group': 'sky', 'new-finding': 'orange', 'replay-halted': 'red' }

export function AlertKindBadge({ kind }: { kind: string }) {
  return <Badge tone={KIND_TONES[kind as AlertRuleDto['kind']] ?? 'zinc'}>{KIND_LABELS[kind as AlertRuleDto['kind']] ?? visibleText(kind)}</Badge>
}

/** "5 min", "2 h", "1 d 6 h": the rule's window and cool-down. */
export function minutesText(minutes: number): string {
  if (minutes === 0) return 'none'
  if (minutes < 60) return `${minutes} min`
  if (minutes < 1440) return minutes % 60 === 0 ? `${minutes / 60} h` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`
  const days = Math.floor(minutes / 1440)
  const hours = Math.round((minutes % 1440) / 60)
  return hours ? `${days} d ${hours} h` : `${days} d`
}

/** A threshold as typed (0.5, 2, 1,000), not rounded the way measured rates are. */
export function thresholdText(perMinute: number | null): string {
  if (perMinute === null) return '—'
  return `${new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 }).format(perMinute)}/min`
}

/** What a rule watches: a source's queue, a group's title, or everything of its kind. */
export function RuleSubject({ rule }: { rule: AlertRuleDto }) {
  if (rule.kind === 'new-group') return <span className="text-zinc-500">any new error group</span>
  if (rule.kind === 'new-finding') return <span className="text-zinc-500">a new topology finding, {rule.minSeverity ?? 'warning'} or worse</span>
  if (rule.kind === 'replay-halted') return <span className="text-zinc-500">any staged replay that halts</span>
  if (rule.kind === 'source-rate') {
    if (!rule.source) return <span className="text-zinc-500">every source</span>
    return (
      <Link href={`/messages?source=${encodeURIComponent(rule.source.id)}`} className="font-mono text-xs text-zinc-900 hover:text-brand hover:underline" title={visibleText(rule.source.queue)}>
        {visibleText(rule.source.queue)}
      </Link>
    )
  }
  if (!rule.group) return <span className="text-zinc-500">every group</span>
  const title = visibleText(rule.group.title)
  return (
    <Link href={`/groups/${encodeURIComponent(rule.group.id)}`} className="font-mono text-xs text-zinc-900 hover:text-brand hover:underline" title={title}>
      {title}
    </Link>
  )
}

/** The subject of an alert event: a source (its messages) or a group, linked. */
export function EventSubject({ subject }: { subject: AlertEventDto['subject'] }) {
  const label = visibleText(subject.label)
  const href =
    // A resolution is about its whole rule, which has no page of its own.
    subject.id === null || subject.type === 'rule'
      ? null
      : subject.type === 'source'
        ? `/messages?source=${encodeURIComponent(subject.id)}`
        : subject.type === 'finding'
          ? `/topology?finding=${encodeURIComponent(subject.id)}`
          : subject.type === 'replay'
            ? `/replays/${encodeURIComponent(subject.id)}`
            : `/groups/${encodeURIComponent(subject.id)}`
  return (
    <span className="flex min-w-0 items-center gap-1.5">
      <span className="w-11 shrink-0 text-[11px] text-zinc-400">{subject.type}</span>
      {href ? (
        <Link href={href} className="min-w-0 truncate font-mono text-xs text-zinc-900 hover:text-brand hover:underline" title={label}>
          {label}
        </Link>
      ) : (
        <span className="min-w-0 truncate font-mono text-xs" title={label}>
          {label}
        </span>
      )}
    </span>
  )
}

/** "3.6/min ≥ 2/min", with the measured rate in front; a new-group event has no rate. */
export function RateVsThreshold({ event }: { event: Pick<AlertEventDto, 'ratePerMinute' | 'thresholdPerMinute' | 'state' | 'kind'> }) {
  if (event.state === 'resolved') return <span className="text-zinc-500">quiet for its window</span>
  if (event.ratePerMinute === null) return <span className="text-zinc-500">{event.kind === 'new-group' ? 'new group' : event.kind === 'new-finding' ? 'new finding' : event.kind === 'replay-halted' ? 'halted' : '—'}</span>
  const over = event.state === 'firing'
  return (
    <span className="tabular-nums" title={`${event.ratePerMinute} dead letters/min; threshold ${event.thresholdPerMinute ?? '—'}/min`}>
      <span className={over ? 'font-semibold text-red-700' : 'text-zinc-800'}>{formatRate(event.ratePerMinute)}/min</span>
      {event.thresholdPerMinute !== null && (
        <span className="text-zinc-500">
          {' '}
          {over ? '≥' : '<'} {thresholdText(event.thresholdPerMinute)}
        </span>
      )}
    </span>
  )
}
