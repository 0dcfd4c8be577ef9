'use client'

import Link from 'next/link'
import { Fragment, useMemo, useState } from 'react'
import { Badge, type Tone } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { Select } from '@/components/ui/fields'
import { DataTable, DetailRow, DetailsToggle, type DataColumn } from '@/components/ui/data-table'
import { LoadMore } from '@/components/ui/load-more'
import { EmptyState, ErrorState } from '@/components/ui/states'
import { AbsoluteTime, RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { visibleText } from '@/lib/client/format'
import { useAudit } from '@/lib/client/use-audit'
import { useUrlState } from '@/lib/client/use-url-state'
import { AUDIT_ACTIONS, AUDIT_SUBJECT_TYPES as SUBJECT_TYPES, type AuditEntryDto } from '@/lib/shared/schemas/audit'

const KEYS = ['action', 'subjectType', 'subjectId'] as const
const COLUMNS: DataColumn[] = [
  { header: 'When', width: 'w-60' },
  { header: 'Who', width: 'w-36' },
  { header: 'Action', width: 'w-40' },
  { header: 'Subject', width: 'w-32' },
  { header: 'What' },
  { header: 'Outcome', width: 'w-[16%]' },
  { width: 'w-20' },
]

const ACTION_TONES: Record<AuditEntryDto['action'], Tone> = {
  'replay.created': 'blue',
  'replay.cancelled': 'amber',
  'replay.finished': 'green',
  'replay.halted': 'red',
  'replay.resumed': 'blue',
  'replay.halt-timed-out': 'orange',
  'replay.approval-requested': 'violet',
  'replay.approved': 'green',
  'replay.rejected': 'red',
  'replay.expired': 'amber',
  'replay.started': 'blue',
  'messages.resolved': 'violet',
  'messages.superseded': 'violet',
  'replay.item-superseded': 'violet',
  'messages.restored': 'orange',
  'message.edited': 'violet',
  'messages.bulk-edited': 'violet',
  'pause.created': 'orange',
  'pause.resumed': 'sky',
  'group.updated': 'zinc',
  'topology.finding-acknowledged': 'zinc',
  'topology.applied': 'blue',
  'message.raw-viewed': 'zinc',
  'source.created': 'blue',
  'source.updated': 'zinc',
  'source.deleted': 'amber',
  'settings.updated': 'zinc',
  'alert-rule.created': 'blue',
  'alert-rule.updated': 'zinc',
  'alert-rule.deleted': 'amber',
  'webhook.created': 'blue',
  'webhook.deleted': 'amber',
  'user.created': 'blue',
  'user.updated': 'zinc',
  'token.created': 'blue',
  'token.revoked': 'amber',
  'auth.signed-in': 'green',
  'auth.sign-in-failed': 'red',
  'auth.signed-out': 'zinc',
}

const ACTION_LABELS: Record<AuditEntryDto['action'], string> = {
  'replay.created': 'replay created',
  'replay.cancelled': 'replay cancelled',
  'replay.finished': 'replay finished',
  'replay.halted': 'replay halted',
  'replay.resumed': 'replay resumed',
  'replay.halt-timed-out': 'halt timed out',
  'replay.approval-requested': 'approval requested',
  'replay.approved': 'replay approved',
  'replay.rejected': 'replay rejected',
  'replay.expired': 'approval expired',
  'replay.started': 'replay started',
  'messages.resolved': 'messages resolved',
  'messages.superseded': 'resolved as superseded',
  'replay.item-superseded': 'dropped by a guard: superseded',
  'messages.restored': 'restored to dead',
  'message.edited': 'message edited',
  'messages.bulk-edited': 'messages bulk-edited',
  'pause.created': 'pause created',
  'pause.resumed': 'pause resumed',
  'group.updated': 'group triaged',
  'topology.finding-acknowledged': 'finding acknowledged',
  'topology.applied': 'topology applied',
  'message.raw-viewed': 'raw message viewed',
  'source.created': 'source added',
  'source.updated': 'source changed',
  'source.deleted': 'source removed',
  'settings.updated': 'settings changed',
  'alert-rule.created': 'alert rule added',
  'alert-rule.updated': 'alert rule changed',
  'alert-rule.deleted': 'alert rule removed',
  'webhook.created': 'webhook added',
  'webhook.deleted': 'webhook removed',
  'user.created': 'user added',
  'user.updated': 'user changed',
  'token.created': 'token created',
  'token.revoked': 'token revoked',
  'auth.signed-in': 'signed in',
  'auth.sign-in-failed': 'sign-in failed',
  'auth.signed-out': 'signed out',
}

function subjectHref(subject: AuditEntryDto['subject']): string | null {
  if (!subject.id) return null
  const id = encodeURIComponent(subject.id)
  switch (subject.type) {
    case 'replay':
      return `/replays/${id}`
    case 'message':
      return `/messages/${id}`
    case 'group':
      return `/groups/${id}`
    case 'pause':
      return '/pauses?show=all'
    case 'source':
      return '/sources'
    case 'user':
    case 'token':
      return '/settings/access'
    case 'topology-finding':
      return '/topology'
    case 'vhost':
      return `/topology?vhost=${id}`
    default:
      return null
  }
}

function Subject({ subject }: { subject: AuditEntryDto['subject'] }) {
  const text = `${subject.type}${subject.id ? ` #${visibleText(subject.id)}` : ''}`
  const href = subjectHref(subject)
  return href ? (
    <Link href={href} className="font-mono text-brand hover:underline">
      {text}
    </Link>
  ) : (
    <span className="font-mono text-zinc-700">{text}</span>
  )
}

function outcomeTone(outcome: string): string {
  if (/fail|error|refus|unroutable|cancel/i.test(outcome)) return 'text-red-700'
  if (/ok|complete|success|done|resum|creat|resolved/i.test(outcome)) return 'text-emerald-700'
  return 'text-zinc-700'
}

function EntryRow({ entry }: { entry: AuditEntryDto }) {
  const [open, setOpen] = useState(false)
  const summary = visibleText(entry.summary)
  const outcome = entry.outcome ? visibleText(entry.outcome) : null
  const hasDetails = Object.keys(entry.details).length > 0
  return (
    <Fragment>
      <tr data-audit-id={entry.id} data-action={entry.action} className={cn(open && 'bg-zinc-50')}>
        <td className="truncate text-xs text-zinc-600 tabular-nums">
          <AbsoluteTime iso={entry.at} />
          <span className="ml-1.5 text-zinc-400">
            <RelativeTime iso={entry.at} />
          </span>
        </td>
        <td className="truncate text-xs font-medium" title={visibleText(entry.actor)}>
          {visibleText(entry.actor)}
        </td>
        <td>
          <Badge tone={ACTION_TONES[entry.action] ?? 'zinc'}>{ACTION_LABELS[entry.action] ?? visibleText(entry.action)}</Badge>
        </td>
        <td className="truncate text-xs">
          <Subject subject={entry.subject} />
        </td>
        <td className="truncate" title={summary}>
          {summary}
        </td>
        <td className={cn('truncate text-xs', outcome ? outcomeTone(outcome) : 'text-zinc-400')} title={outcome ?? undefined}>
          {outcome ?? '—'}
        </td>
        <td className="text-right">
          {hasDetails && (
            <DetailsToggle open={open} onToggle={() => setOpen(!open)} />
          )}
        </td>
      </tr>
      {open && (
        <DetailRow columns={COLUMNS}>
          <pre className="max-h-64 overflow-auto font-mono text-[11px] leading-4 break-all whitespace-pre-wrap text-zinc-700">{visibleText(JSON.stringify(entry.details, null, 2))}</pre>
        </DetailRow>
      )}
    </Fragment>
  )
}

/** Who replayed, resolved, paused and resumed what, when, and how it ended; newest first. */
export function AuditPage() {
  const { values, update } = useUrlState(KEYS)
  const action = AUDIT_ACTIONS.includes(values.action as AuditEntryDto['action']) ? values.action! : ''
  const subjectType = SUBJECT_TYPES.includes(values.subjectType as (typeof SUBJECT_TYPES)[number]) ? values.subjectType! : ''
  const subjectId = subjectType && values.subjectId ? values.subjectId.slice(0, 64) : ''
  const params = useMemo(() => {
    const p: Record<string, string> = {}
    if (action) p.action = action
    if (subjectType) p.subjectType = subjectType
    if (subjectId) p.subjectId = subjectId
    return p
  }, [action, subjectType, subjectId])
  const query = useAudit(params)
  const entries = useMemo(() => query.data?.pages.flatMap((p) => p.entries) ?? [], [query.data])
  const filtered = Object.keys(params).length > 0

  return (
    <div className="space-y-3">
      <div className="flex items-baseline justify-between gap-4">
        <h1 className="text-base font-semibold">Audit log</h1>
        <span className="text-xs text-zinc-500">Every replay, resolve, pause and resume, with who did it. Names come from the operator field in the header.</span>
      </div>
      <div className="flex flex-wrap items-center gap-2" role="search" aria-label="Audit filters">
        <Select aria-label="Action" value={action} placeholder="Every action" options={AUDIT_ACTIONS.map((a) => ({ value: a, label: ACTION_LABELS[a] }))} onChange={(e) => update({ action: e.target.value || null })} />
        <Select
          aria-label="Subject type"
          value={subjectType}
          placeholder="Any subject"
          options={SUBJECT_TYPES.map((t) => ({ value: t, label: t }))}
          onChange={(e) => update({ subjectType: e.target.value || null, subjectId: null })}
        />
        {subjectType && subjectId && (
          <span className="inline-flex h-7 items-center gap-1 rounded-md border border-zinc-300 bg-white pl-2 text-xs">
            <span className="text-zinc-500">{subjectType}</span>
            <span className="font-mono text-zinc-800">#{visibleText(subjectId)}</span>
            <button type="button" onClick={() => update({ subjectId: null })} aria-label="Remove subject filter" className="h-full rounded-r-md px-1.5 text-zinc-500 hover:bg-zinc-100 hover:text-zinc-900">
              ×
            </button>
          </span>
        )}
        {filtered && (
          <Button variant="ghost" onClick={() => update({ action: null, subjectType: null, subjectId: null })}>
            Clear filters
          </Button>
        )}
        {query.isFetching && !query.isPending && !query.isFetchingNextPage && <span className="text-xs text-zinc-400">updating…</span>}
      </div>
      {query.error && entries.length === 0 ? (
        <ErrorState title="Could not load the audit log" error={query.error} onRetry={() => void query.refetch()} />
      ) : (
        <div className="overflow-hidden rounded-md border border-zinc-200 bg-white">
          <div className={query.isPlaceholderData ? 'opacity-60 transition-opacity' : undefined}>
            <DataTable label="Audit log" columns={COLUMNS} pending={query.isPending} skeletonRows={10}>
              {entries.map((e) => <EntryRow key={e.id} entry={e} />)}
            </DataTable>
          </div>
          {!query.isPending && !query.error && entries.length === 0 && (
            <div className="p-4">
              <EmptyState title={filtered ? 'No entries match these filters' : 'Nothing audited yet'}>
                {filtered ? null : 'Replays, resolves, pauses and resumes are recorded here as they happen.'}
              </EmptyState>
            </div>
          )}
          <LoadMore pages={query} loaded={entries.length} one="entry" many="entries" />
        </div>
      )}
    </div>
  )
}
