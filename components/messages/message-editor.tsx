'use client'

import Link from 'next/link'
import { useMemo, useState } from 'react'
import { ReplayPlanDialog } from '@/components/replays/replay-plan-dialog'
import { Button } from '@/components/ui/button'
import { DetailSkeleton } from '@/components/ui/skeleton'
import { EmptyState, ErrorState, InlineError } from '@/components/ui/states'
import { ApiError } from '@/lib/client/api'
import { useMessage } from '@/lib/client/use-messages'
import { useCreateRevision, useRevisions } from '@/lib/client/use-revisions'
import { useCan } from '@/lib/client/use-session'
import type { MessageDetailDto } from '@/lib/shared/schemas/message'
import type { CreateRevisionInput, MessageRevisionsDto } from '@/lib/shared/schemas/revision'
import { EditBodyPanel, type BodyUpload } from './edit-body-panel'
import { EditChangesPanel, type CompareTo } from './edit-changes-panel'
import { EditHeadersPanel, EditPropertiesPanel } from './edit-fields-panels'
import { baseOf, headerChanges, headersOf, parseJsonError, propertyChanges, propertyEdits, propertyTexts, rowsOf, type HeaderRow } from './message-edit'

/** The edit page: loads the message and its revisions, then the editor. */
export function MessageEditor({ id }: { id: string }) {
  const message = useMessage(id)
  const revisions = useRevisions(id)
  const canEdit = useCan('messages:edit')
  if (message.isPending || revisions.isPending) return <DetailSkeleton crumb="w-40" title="w-1/2" panels={['h-64', 'h-40']} />
  if (message.error instanceof ApiError && message.error.status === 404) return <EmptyState title={`Message ${id} not found`} />
  if (message.error || revisions.error || !message.data || !revisions.data) {
    return <ErrorState title="Could not load this message for editing" error={message.error ?? revisions.error} onRetry={() => void Promise.all([message.refetch(), revisions.refetch()])} />
  }
  if (!canEdit) return <EmptyState title="Editing needs the operator role">Viewers see messages but do not change them.</EmptyState>
  return <Editor message={message.data} revisions={revisions.data} />
}

/**
 * The editor: body, headers and properties each in their panel (edit-body-panel.tsx, edit-fields-panels.tsx), what
 * they make checked and compared in message-edit.ts, the changes shown in edit-changes-panel.tsx. Saving writes the
 * next revision; "Save and replay" then opens the replay plan for this message.
 */
function Editor({ message: m, revisions }: { message: MessageDetailDto; revisions: MessageRevisionsDto }) {
  const base = useMemo(() => baseOf(m, revisions), [m, revisions])
  const original = useMemo(() => baseOf(m, { latest: null }), [m])
  const textual = base.text !== null && !base.truncated
  const [body, setBody] = useState(base.text ?? '')
  const [upload, setUpload] = useState<BodyUpload | null>(null)
  const [rows, setRows] = useState<HeaderRow[]>(() => rowsOf(base.headers))
  const [props, setProps] = useState(() => propertyTexts(base.properties))
  const [compareTo, setCompareTo] = useState<CompareTo>('previous')
  const [replayOpen, setReplayOpen] = useState(false)
  const [saved, setSaved] = useState<number | null>(null)
  const create = useCreateRevision(m.id)

  const isJson = base.encoding === 'json' || /json/i.test(props.contentType)
  const jsonError = textual && isJson ? parseJsonError(body) : null
  const built = headersOf(rows)
  const against = compareTo === 'original' ? original : base
  const edits = propertyEdits(base.properties, props)
  const blocked = Boolean(jsonError) || 'error' in built || create.isPending

  const save = (then?: () => void) => {
    if ('error' in built) return
    const input: CreateRevisionInput = { headers: built.headers, properties: edits, basedOn: base.revision }
    if (upload) input.body = { kind: 'base64', base64: upload.base64 }
    else if (textual && body !== base.text) input.body = isJson ? { kind: 'json', text: body } : { kind: 'text', text: body }
    create.mutate(input, {
      onSuccess: (result) => {
        setSaved(result.revision.revision)
        then?.()
      },
    })
  }

  return (
    <div className="space-y-3">
      <header className="space-y-1">
        <nav className="text-xs text-zinc-500" aria-label="Breadcrumb">
          <Link href="/messages" className="hover:text-zinc-900 hover:underline">
            Messages
          </Link>{' '}
          /{' '}
          <Link href={`/messages/${m.id}`} className="hover:text-zinc-900 hover:underline">
            #{m.id}
          </Link>{' '}
          / Edit
        </nav>
        <div className="flex items-center gap-3">
          <h1 className="min-w-0 flex-1 truncate text-[15px] font-semibold">
            Edit message #{m.id} <span className="font-normal text-zinc-500">· from {base.revision === 0 ? 'the original' : `revision ${base.revision}`}</span>
          </h1>
          <span className="text-xs" aria-live="polite">
            {!create.error && saved !== null ? (
              <span className="text-green-700" data-testid="saved-revision">
                Saved as revision {saved}
              </span>
            ) : null}
          </span>
          <Button onClick={() => save()} disabled={blocked}>
            Save revision
          </Button>
          <Button variant="primary" onClick={() => save(() => setReplayOpen(true))} disabled={blocked || m.status !== 'dead'} title={m.status === 'dead' ? undefined : `Only dead messages are replayed; this one is ${m.status}`}>
            Save and replay…
          </Button>
        </div>
        {/* On a line of its own: a refusal names what to fix (a header, the JSON) and must be read whole. */}
        {create.error ? (
          <p className="rounded-md border border-red-200 bg-red-50 px-3 py-1.5 text-xs break-words" data-testid="save-error">
            <InlineError error={create.error} />
          </p>
        ) : null}
        <p className="text-xs text-zinc-500">The stored message never changes: saving writes a new revision, and the next replay of this message sends it instead of the original.</p>
      </header>

      <EditBodyPanel base={base} textual={textual} isJson={isJson} body={body} onBody={setBody} jsonError={jsonError} upload={upload} onUpload={setUpload} />

      <div className="grid gap-3 xl:grid-cols-[minmax(0,3fr)_minmax(0,2fr)]">
        <EditHeadersPanel rows={rows} onRows={setRows} />
        <EditPropertiesPanel texts={props} onTexts={setProps} />
      </div>

      <EditChangesPanel
        baseRevision={base.revision}
        compareTo={compareTo}
        onCompareTo={setCompareTo}
        against={against}
        body={textual ? body : null}
        upload={upload}
        fields={'error' in built ? built : { headers: headerChanges(against.headers, built.headers), properties: propertyChanges(against.properties, edits) }}
      />

      {replayOpen && <ReplayPlanDialog selection={{ ids: [m.id] }} subject={`message #${m.id}, revision ${saved ?? ''}`} onClose={() => setReplayOpen(false)} />}
    </div>
  )
}
