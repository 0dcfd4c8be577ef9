'use client'

import Link from 'next/link'
import { useRouter } from 'next/navigation'
import { memo, useEffect, useMemo, useRef } from 'react'
import { KindBadge, StatusBadge } from '@/components/ui/badge'
import { Checkbox } from '@/components/ui/fields'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { AbsoluteTime } from '@/components/ui/time'
import { visibleText } from '@/lib/client/format'
import { rowLinkProps } from '@/lib/client/row-link'
import { useIsSelected, useSelectionState } from '@/lib/client/selection-store'
import { useIsCursor, useScrollCursorIntoView, type CursorStore } from '@/lib/client/use-row-cursor'
import type { MessageSummaryDto } from '@/lib/shared/schemas/message'

type MessagesTableProps = {
  messages: MessageSummaryDto[]
  loading: boolean
  cursorStore: CursorStore
  onCheck: (id: string, shift: boolean) => void
  onCheckPage: (selected: boolean) => void
}

export function errorSummary(m: Pick<MessageSummaryDto, 'errorType' | 'errorMessage' | 'deathReason'>): { type: string; message: string } {
  const type = m.errorType ? visibleText(m.errorType) : ''
  const message = m.errorMessage ? visibleText(m.errorMessage) : type ? '' : m.deathReason ? `dead-lettered: ${m.deathReason}` : '(no error recorded)'
  return { type, message }
}

const MessageRow = memo(function MessageRow({ message, index, cursorStore, onCheck }: { message: MessageSummaryDto; index: number; cursorStore: CursorStore; onCheck: (id: string, shift: boolean) => void }) {
  const selected = useIsSelected(message.id)
  const cursor = useIsCursor(cursorStore, index)
  const { type, message: text } = errorSummary(message)
  const service = [message.service, message.serviceVersion].filter(Boolean).map((s) => visibleText(s!)).join('@')
  const entity = message.entityKey ? visibleText(message.entityKey) : ''
  const href = `/messages/${message.id}`
  const router = useRouter()
  return (
    <tr
      data-row-index={index}
      data-message-id={message.id}
      data-cursor={cursor || undefined}
      data-selected={selected || undefined}
      className="hover:bg-zinc-50"
      {...rowLinkProps({ href, index, cursorStore, router })}
    >
      {/* The checkbox's cell selects; it never opens the message (a near miss must not navigate away from a selection). */}
      <td className="select-none" data-row-link-ignore>
        <Checkbox
          aria-label={`Select message ${message.id}`}
          checked={selected}
          onChange={() => {}}
          onClick={(e) => onCheck(message.id, e.shiftKey)}
        />
      </td>
      <td className="truncate text-xs text-zinc-600 tabular-nums">
        <Link href={href} tabIndex={-1} className="hover:text-zinc-900 hover:underline">
          <AbsoluteTime iso={message.failedAt} />
        </Link>
      </td>
      <td className="truncate font-mono text-xs text-zinc-600" title={visibleText(message.source.queue)}>
        {visibleText(message.source.queue)}
      </td>
      <td className="truncate" title={[type, text].filter(Boolean).join(': ')}>
        <Link href={href} tabIndex={-1} className="group font-mono text-[12px]">
          {type && <span className="text-zinc-900 group-hover:underline">{type}</span>}
          {type && text && <span className="text-zinc-400">: </span>}
          <span className="text-zinc-600">{text}</span>
        </Link>
      </td>
      <td className="truncate">
        <KindBadge kind={message.failureKind} />
      </td>
      <td className="truncate">
        <StatusBadge status={message.status} />
      </td>
      <td className="truncate font-mono text-xs text-zinc-600" title={service}>
        {service || '—'}
      </td>
      <td className="truncate font-mono text-xs text-zinc-700" title={entity}>
        {entity ? (
          <Link href={`/messages?entity=${encodeURIComponent(message.entityKey!)}`} className="hover:underline">
            {entity}
          </Link>
        ) : (
          '—'
        )}
      </td>
      <td className="text-right text-zinc-600 tabular-nums">{message.attempts ?? '—'}</td>
    </tr>
  )
})

function PageCheckbox({ ids, onCheckPage }: { ids: string[]; onCheckPage: (selected: boolean) => void }) {
  const state = useSelectionState()
  const ref = useRef<HTMLInputElement>(null)
  const selectedCount = state.all ? ids.length : ids.filter((id) => state.ids.has(id)).length
  const all = ids.length > 0 && selectedCount === ids.length
  const some = selectedCount > 0 && !all
  useEffect(() => {
    if (ref.current) ref.current.indeterminate = some
  }, [some])
  return <Checkbox ref={ref} aria-label="Select all loaded messages" checked={all} disabled={ids.length === 0} onChange={() => onCheckPage(!all)} />
}

/** Memoised: the toolbar above changing (a first selection, a count arriving) does not re-render every row. */
export const MessagesTable = memo(function MessagesTable({ messages, loading, cursorStore, onCheck, onCheckPage }: MessagesTableProps) {
  const body = useRef<HTMLTableSectionElement>(null)
  useScrollCursorIntoView(cursorStore, body)
  const ids = useMemo(() => messages.map((m) => m.id), [messages])
  const columns = useMemo<DataColumn[]>(
    () => [
      { header: <PageCheckbox ids={ids} onCheckPage={onCheckPage} />, width: 'w-8' },
      { header: 'Failed at', width: 'w-44' },
      { header: 'Source', width: 'w-44' },
      { header: 'Error' },
      { header: 'Kind', width: 'w-28' },
      { header: 'Status', width: 'w-24' },
      { header: 'Service', width: 'w-44' },
      { header: 'Entity', width: 'w-40' },
      { header: 'Attempts', width: 'w-24', align: 'right' },
    ],
    [ids, onCheckPage],
  )
  return (
    <DataTable label="Messages" columns={columns} pending={loading && messages.length === 0} skeletonRows={12} bodyRef={body}>
      {messages.map((m, i) => (
        <MessageRow key={m.id} message={m} index={i} cursorStore={cursorStore} onCheck={onCheck} />
      ))}
    </DataTable>
  )
})
