'use client'

import { CopyTicketButton } from '@/components/export/copy-ticket-button'
import { ExportMenu } from '@/components/export/export-menu'
import Link from 'next/link'
import type { ReactNode } from 'react'
import { PauseLink } from '@/components/pauses/pause-link'
import { TraceField } from '@/components/traces/trace-link'
import { FailedAgainNotice, MessageReplays, ReplayedField } from '@/components/replays/message-replays'
import { ReplayActions } from '@/components/replays/replay-actions'
import { Badge, KindBadge, StatusBadge } from '@/components/ui/badge'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { Panel } from '@/components/ui/panel'
import { DetailSkeleton } from '@/components/ui/skeleton'
import { ClampedText } from '@/components/ui/clamped-text'
import { EmptyState, ErrorState } from '@/components/ui/states'
import { AbsoluteTime, RelativeTime } from '@/components/ui/time'
import { ApiError } from '@/lib/client/api'
import { formatBytes, formatCount, visibleText } from '@/lib/client/format'
import { useMessage } from '@/lib/client/use-messages'
import { useCan } from '@/lib/client/use-session'
import type { MessageDetailDto } from '@/lib/shared/schemas/message'
import { BodyViewer } from './body-viewer'
import { RelatedMessages } from './related-messages'
import { HeadersTable, TypedValueView } from './typed-headers'
import { XDeathTimeline } from './x-death-timeline'
import { RevisionHistory } from './revision-history'

const text = (value: string | null | undefined) => (value === null || value === undefined || value === '' ? null : visibleText(value))
const clamped = (value: string | null | undefined, limit = 160) => {
  const t = text(value)
  return t === null ? null : <ClampedText text={t} limit={limit} />
}

function Fields({ items }: { items: [string, ReactNode][] }) {
  return (
    <dl className="grid grid-cols-1 gap-x-6 gap-y-1.5 sm:grid-cols-2 xl:grid-cols-3">
      {items.map(([label, value]) => (
        <div key={label} className="grid min-w-0 grid-cols-[8.5rem_minmax(0,1fr)] items-baseline gap-2">
          <dt className="truncate text-xs text-zinc-500">{label}</dt>
          <dd className="min-w-0 font-mono text-xs break-all text-zinc-900">{value ?? <span className="text-zinc-400">—</span>}</dd>
        </div>
      ))}
    </dl>
  )
}

function derivedFields(m: MessageDetailDto): [string, ReactNode][] {
  const entity = text(m.entityKey)
  return [
    ['Source', <Link key="s" href={`/messages?source=${m.source.id}`} className="hover:underline">{visibleText(m.source.queue)}</Link>],
    ['Failure kind', <KindBadge key="k" kind={m.failureKind} />],
    ['Framework', clamped(m.framework)],
    ['Service', clamped(m.service)],
    ['Service version', clamped(m.serviceVersion)],
    ['Entity', entity && <Link key="e" href={`/messages?entity=${encodeURIComponent(m.entityKey!)}`} className="hover:underline" title={entity}>{entity.length > 160 ? `${entity.slice(0, 160)}…` : entity}</Link>],
    ['Trace', m.trace && <TraceField key="t" trace={m.trace} />],
    ['Attempts', m.attempts === null ? null : formatCount(m.attempts)],
    ['Death reason', clamped(m.deathReason)],
    ['Origin exchange', m.source.broker === 'jetstream' ? <span key="oe" className="text-zinc-400">none: JetStream</span> : m.origin.exchange === '' ? '(default)' : clamped(m.origin.exchange)],
    ['Origin routing keys', clamped(m.origin.routingKeys.join(', '))],
    ['Origin queue', clamped(m.origin.queue)],
    m.source.broker === 'jetstream'
      ? ['Subject', clamped(m.delivery.routingKey)]
      : ['Delivered via', clamped(`${m.delivery.exchange || '(default)'} → ${m.delivery.routingKey}${m.delivery.redelivered ? ' (redelivered)' : ''}`)],
    ['First death', <AbsoluteTime key="fd" iso={m.firstDeathAt} />],
    ['Last death', <AbsoluteTime key="ld" iso={m.lastDeathAt} />],
    ['Failed at', <AbsoluteTime key="fa" iso={m.failedAt} />],
    ['Ingested at', <AbsoluteTime key="ia" iso={m.ingestedAt} />],
    ['Seen', m.seenCount > 1 ? `${formatCount(m.seenCount)} times` : 'once'],
    ['Body', `${formatBytes(m.body.size)} · ${m.body.encoding}`],
    ['Flags', m.flags.length ? m.flags.map((f) => <Badge key={f} tone="amber" className="mr-1">{visibleText(f)}</Badge>) : null],
    ['Replayed', <ReplayedField key="r" message={m} />],
  ]
}

// AMQP's timestamp property is whole seconds since the epoch.
const timestampIso = (seconds: number) => {
  const d = new Date(seconds * 1000)
  return Number.isNaN(d.getTime()) ? 'invalid time' : d.toISOString()
}

const PROPERTY_COLUMNS: DataColumn[] = [{ width: 'w-[38%]' }, {}]

function PropertiesTable({ properties }: { properties: Record<string, unknown> }) {
  const entries = Object.entries(properties).filter(([k, v]) => k !== 'headers' && v !== undefined && v !== null)
  if (entries.length === 0) return <p className="text-zinc-500">No properties set.</p>
  return (
    <DataTable label="Properties" columns={PROPERTY_COLUMNS} variant="fields">
      {entries.map(([k, v]) => (
        <tr key={k} className="align-top">
          <td className="border-b border-zinc-100 px-2 py-1 font-mono text-xs text-zinc-500">{visibleText(k)}</td>
          <td className="border-b border-zinc-100 px-2 py-1 font-mono text-xs break-all text-zinc-900">
            {typeof v === 'object' && v !== null && 't' in v ? (
              <TypedValueView value={v} />
            ) : k === 'timestamp' && typeof v === 'number' ? (
              <>
                {v} <span className="text-zinc-500">({timestampIso(v)})</span>
              </>
            ) : (
              visibleText(typeof v === 'string' ? v : JSON.stringify(v))
            )}
          </td>
        </tr>
      ))}
    </DataTable>
  )
}

/** Why the message has its status: a resolve's reason, or why its last replay left it dead. */
function StatusNote({ message: m }: { message: MessageDetailDto }) {
  if (!m.statusReason && !(m.status !== 'dead' && m.statusChangedBy)) return null
  const reason = m.statusReason ? visibleText(m.statusReason) : null
  const lead = m.status === 'dead' ? 'Back to dead after a replay' : m.status[0]!.toUpperCase() + m.status.slice(1)
  return (
    <p data-testid="status-note" className={`rounded-md border px-3 py-1.5 ${m.status === 'dead' ? 'border-red-200 bg-red-50 text-red-900' : 'border-zinc-200 bg-white text-zinc-700'}`}>
      <strong className="font-medium">{lead}</strong>
      {m.statusChangedBy && <> by {visibleText(m.statusChangedBy)}</>}
      {m.statusChangedAt && (
        <>
          {' '}
          <RelativeTime iso={m.statusChangedAt} />
        </>
      )}
      {reason && (
        <>
          : <ClampedText text={reason} limit={300} className="break-words" />
        </>
      )}
    </p>
  )
}

export function MessageDetail({ id }: { id: string }) {
  const { data: m, error, isPending, refetch } = useMessage(id)
  const canEdit = useCan('messages:edit')
  const canRaw = useCan('messages:raw')
  if (isPending) return <DetailSkeleton crumb="w-40" title="w-3/4" panels={['h-28', 'h-40', 'h-64']} />
  if (error instanceof ApiError && error.status === 404) {
    return (
      <EmptyState title={`Message ${id} not found`}>
        <Link href="/messages" className="text-brand underline underline-offset-2">
          Back to the messages
        </Link>
      </EmptyState>
    )
  }
  if (error || !m) return <ErrorState title="Could not load this message" error={error} onRetry={() => void refetch()} />

  const errorHead = [text(m.error.type), text(m.error.message)].filter(Boolean).join(': ')
  const sameGroup = m.related.sameGroup.filter((r) => r.id !== m.id)
  const sameEntity = m.related.sameEntity.filter((r) => r.id !== m.id)
  const { replays, replayedFrom: failedAgain } = m
  const actionable = m.status === 'dead'

  return (
    <div className="space-y-3">
      <header className="space-y-1">
        <nav className="text-xs text-zinc-500" aria-label="Breadcrumb">
          <Link href="/messages" className="hover:text-zinc-900 hover:underline">
            Messages
          </Link>{' '}
          / #{m.id}
        </nav>
        <div className="flex items-start gap-3">
          <h1 className="min-w-0 flex-1 font-mono text-[15px] font-semibold break-all">
            <Link href={`/groups/${m.groupId}`} className="hover:underline" title="Open the error group">
              {visibleText(m.groupTitle)}
            </Link>
          </h1>
          <StatusBadge status={m.status} />
          <div className="flex shrink-0 items-center gap-2" title={actionable ? undefined : `Only dead messages can be replayed or resolved; this one is ${m.status}.`}>
            <CopyTicketButton kind="message" id={m.id} />
            <ExportMenu selection={{ ids: [m.id] }} />
            {m.entityKey && <PauseLink label="Pause this entity" sourceId={m.source.id} queue={m.origin.queue} entityKey={m.entityKey} />}
            {canEdit && (
              <Link href={`/messages/${m.id}/edit`} className="inline-flex h-7 items-center rounded-md border border-zinc-300 bg-white px-2.5 text-[13px] font-medium text-zinc-800 hover:bg-zinc-50">
                Edit…
              </Link>
            )}
            <ReplayActions
              selection={{ ids: [m.id] }}
              subject={`message #${m.id}`}
              replayLabel="Replay…"
              resolveLabel="Resolve…"
              disabled={!actionable}
              restoreLabel={m.status === 'resolved' ? 'Restore…' : undefined}
            />
          </div>
        </div>
        <p className="text-xs text-zinc-500">
          Failed <RelativeTime iso={m.failedAt} /> on <span className="font-mono text-zinc-700">{visibleText(m.source.queue)}</span>
          {m.service && (
            <>
              {' '}
              · <ClampedText className="font-mono text-zinc-700" limit={120} text={visibleText([m.service, m.serviceVersion].filter(Boolean).join('@'))} />
            </>
          )}
        </p>
      </header>

      {failedAgain && <FailedAgainNotice failedAgain={failedAgain} />}
      <StatusNote message={m} />

      <Panel title="Derived">
        <Fields items={derivedFields(m)} />
      </Panel>

      <Panel title="Error">
        {errorHead ? (
          <p className="max-h-48 overflow-auto font-mono text-xs font-medium break-all whitespace-pre-wrap text-red-800" data-testid="error-message">
            {errorHead}
          </p>
        ) : (
          <p className="text-zinc-500">No error recorded{m.deathReason ? `; the broker dead-lettered it (${visibleText(m.deathReason)})` : ''}.</p>
        )}
        {m.error.stack && (
          <pre className="mt-2 max-h-80 overflow-auto rounded border border-zinc-200 bg-zinc-50 p-2 font-mono text-[11px] leading-4 break-all whitespace-pre-wrap text-zinc-700" data-testid="stack-trace">
            {visibleText(m.error.stack)}
          </pre>
        )}
      </Panel>

      <Panel title="Body">
        <BodyViewer key={m.id} id={m.id} body={m.body} />
      </Panel>

      <div className="grid gap-3 xl:grid-cols-2">
        <Panel title="Headers" bodyClassName="p-0 pb-1">
          <HeadersTable headers={m.headersTyped} />
        </Panel>
        <div className="min-w-0 space-y-3">
          <Panel title="x-death">
            <XDeathTimeline entries={m.xDeath} broker={m.source.broker} />
          </Panel>
          <Panel title="Properties" bodyClassName="p-0 pb-1">
            <PropertiesTable properties={m.properties} />
          </Panel>
        </div>
      </div>

      {canRaw && (
        <Panel title="Revisions">
          <RevisionHistory id={m.id} />
        </Panel>
      )}

      <Panel title="Replay history" bodyClassName={replays.length ? 'p-0!' : undefined}>
        <MessageReplays replays={replays} />
      </Panel>

      <div className="grid gap-3 xl:grid-cols-2">
        <Panel title="Same group">
          <RelatedMessages messages={sameGroup} empty="No other messages in this group." moreHref={`/messages?group=${m.groupId}`} />
        </Panel>
        <Panel title="Same entity">
          {m.entityKey ? (
            <RelatedMessages messages={sameEntity} empty="No other messages for this entity." moreHref={`/messages?entity=${encodeURIComponent(m.entityKey)}`} />
          ) : (
            <p className="text-zinc-500">
              This message has no entity key. Entity-key rules are set per source on the{' '}
              <Link href="/sources" className="text-brand hover:underline">
                Sources
              </Link>{' '}
              page.
            </p>
          )}
        </Panel>
      </div>
    </div>
  )
}
