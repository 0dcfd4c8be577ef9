'use client'

import Link from 'next/link'
import { useMemo, useState } from 'react'
import { ReplayPlanDialog } from '@/components/replays/replay-plan-dialog'
import { Button } from '@/components/ui/button'
import { Input, Select } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { DetailSkeleton } from '@/components/ui/skeleton'
import { EmptyState, ErrorState, InlineError } from '@/components/ui/states'
import { Tabs } from '@/components/ui/tabs'
import { ApiError } from '@/lib/client/api'
import { formatBytes, visibleText } from '@/lib/client/format'
import { fromEditable, toEditable, EDITABLE_TYPES, type TypedJson } from '@/lib/client/typed-values'
import { useMessage } from '@/lib/client/use-messages'
import { useCreateRevision, useRevisions } from '@/lib/client/use-revisions'
import { useCan } from '@/lib/client/use-session'
import type { MessageDetailDto } from '@/lib/shared/schemas/message'
import type { CreateRevisionInput, HeaderChangeDto, MessageRevisionsDto } from '@/lib/shared/schemas/revision'
import { CodeEditor } from './code-editor'
import { BodyDiff, FieldChanges } from './revision-diff'

type HeaderRow = { key: number; name: string; type: string; text: string; original?: TypedJson }
type Base = { revision: number; encoding: string; text: string | null; size: number; truncated: boolean; headers: Record<string, unknown>; properties: Record<string, unknown> }

const PROPERTY_FIELDS = ['contentType', 'contentEncoding', 'type', 'messageId', 'correlationId', 'replyTo', 'appId', 'priority', 'deliveryMode', 'timestamp'] as const
const NUMBER_PROPERTIES = new Set(['priority', 'deliveryMode', 'timestamp'])

function baseOf(m: MessageDetailDto, r: MessageRevisionsDto): Base {
  if (r.latest) return { revision: r.latest.revision, encoding: r.latest.body.encoding, text: r.latest.body.text, size: r.latest.body.size, truncated: false, headers: r.latest.headersTyped, properties: r.latest.properties }
  return { revision: 0, encoding: m.body.encoding, text: m.body.text, size: m.body.size, truncated: m.body.truncated, headers: m.headersTyped, properties: m.properties }
}

let nextKey = 1
const rowsOf = (headers: Record<string, unknown>): HeaderRow[] =>
  Object.entries(headers).map(([name, value]) => ({ key: nextKey++, name, ...toEditable(value as TypedJson), original: value as TypedJson }))

const propertyText = (properties: Record<string, unknown>) =>
  Object.fromEntries(PROPERTY_FIELDS.map((k) => [k, properties[k] === undefined || properties[k] === null ? '' : String(properties[k])])) as Record<(typeof PROPERTY_FIELDS)[number], string>

function parseJsonError(text: string): string | null {
  try {
    JSON.parse(text)
    return null
  } catch (error) {
    return (error as Error).message
  }
}

/** The header table an edit sends, or the first row that is not a typed value. */
function headersOf(rows: HeaderRow[]): { headers: { name: string; value: TypedJson }[] } | { error: string } {
  const headers: { name: string; value: TypedJson }[] = []
  const names = new Set<string>()
  for (const row of rows) {
    if (!row.name) return { error: 'A header needs a name' }
    if (names.has(row.name)) return { error: `Header "${row.name}" is named twice` }
    names.add(row.name)
    const untouched = row.original && toEditable(row.original).type === row.type && toEditable(row.original).text === row.text
    if (untouched) {
      headers.push({ name: row.name, value: row.original! })
      continue
    }
    const parsed = fromEditable(row.type, row.text)
    if ('error' in parsed) return { error: `Header "${row.name}": ${parsed.error}` }
    headers.push({ name: row.name, value: parsed.value })
  }
  return { headers }
}

function headerChanges(before: Record<string, unknown>, after: { name: string; value: TypedJson }[]): HeaderChangeDto[] {
  const out: HeaderChangeDto[] = []
  const afterMap = new Map(after.map((h) => [h.name, h.value]))
  for (const [name, value] of Object.entries(before)) {
    if (!afterMap.has(name)) out.push({ name, change: 'removed', before: value })
    else if (JSON.stringify(value) !== JSON.stringify(afterMap.get(name))) out.push({ name, change: 'changed', before: value, after: afterMap.get(name) })
  }
  for (const h of after) if (!Object.hasOwn(before, h.name)) out.push({ name: h.name, change: 'added', after: h.value })
  return out
}

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

function Editor({ message: m, revisions }: { message: MessageDetailDto; revisions: MessageRevisionsDto }) {
  const base = useMemo(() => baseOf(m, revisions), [m, revisions])
  const original = useMemo(() => baseOf(m, { ...revisions, latest: null }), [m, revisions])
  const textual = base.text !== null && !base.truncated
  const [body, setBody] = useState(base.text ?? '')
  const [upload, setUpload] = useState<{ name: string; base64: string; size: number } | null>(null)
  const [rows, setRows] = useState<HeaderRow[]>(() => rowsOf(base.headers))
  const [props, setProps] = useState(() => propertyText(base.properties))
  const [compareTo, setCompareTo] = useState<'previous' | 'original'>('previous')
  const [replayOpen, setReplayOpen] = useState(false)
  const [saved, setSaved] = useState<number | null>(null)
  const create = useCreateRevision(m.id)

  const isJson = base.encoding === 'json' || /json/i.test(props.contentType)
  const jsonError = textual && isJson ? parseJsonError(body) : null
  const built = headersOf(rows)
  const against = compareTo === 'original' ? original : base

  const propertyEdits = (): CreateRevisionInput['properties'] => {
    const out: Record<string, string | number | null> = {}
    for (const key of PROPERTY_FIELDS) {
      const before = base.properties[key] === undefined || base.properties[key] === null ? '' : String(base.properties[key])
      if (props[key] === before) continue
      out[key] = props[key] === '' ? null : NUMBER_PROPERTIES.has(key) ? Number(props[key]) : props[key]
    }
    return out as CreateRevisionInput['properties']
  }

  const save = (then?: () => void) => {
    if ('error' in built) return
    const input: CreateRevisionInput = { headers: built.headers, properties: propertyEdits(), basedOn: base.revision }
    if (upload) input.body = { kind: 'base64', base64: upload.base64 }
    else if (textual && body !== base.text) input.body = isJson ? { kind: 'json', text: body } : { kind: 'text', text: body }
    create.mutate(input, {
      onSuccess: (result) => {
        setSaved(result.revision.revision)
        then?.()
      },
    })
  }

  const format = () => {
    try {
      setBody(JSON.stringify(JSON.parse(body), null, 2))
    } catch {
      // The lint gutter and the message below already say why.
    }
  }

  const onFile = async (file: File | undefined) => {
    if (!file) return setUpload(null)
    const bytes = new Uint8Array(await file.arrayBuffer())
    let binary = ''
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
    setUpload({ name: file.name, base64: btoa(binary), size: bytes.length })
  }

  const changes = 'error' in built ? [] : headerChanges(against.headers, built.headers)
  const editedProps = { ...against.properties }
  for (const [k, v] of Object.entries(propertyEdits() ?? {})) {
    if (v === null) delete editedProps[k]
    else editedProps[k] = v
  }
  const propChanges = PROPERTY_FIELDS.filter((k) => JSON.stringify(against.properties[k] ?? null) !== JSON.stringify(editedProps[k] ?? null)).map((k) => ({ name: k, before: against.properties[k] ?? null, after: editedProps[k] ?? null }))
  const blocked = Boolean(jsonError) || 'error' in built || create.isPending

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
            {create.error ? <InlineError error={create.error} /> : saved !== null ? <span className="text-green-700" data-testid="saved-revision">Saved as revision {saved}</span> : null}
          </span>
          <Button onClick={() => save()} disabled={blocked}>
            Save revision
          </Button>
          <Button variant="primary" onClick={() => save(() => setReplayOpen(true))} disabled={blocked || m.status !== 'dead'} title={m.status === 'dead' ? undefined : `Only dead messages are replayed; this one is ${m.status}`}>
            Save and replay…
          </Button>
        </div>
        <p className="text-xs text-zinc-500">The stored message never changes: saving writes a new revision, and the next replay of this message sends it instead of the original.</p>
      </header>

      <Panel
        title="Body"
        actions={
          textual && isJson ? (
            <Button size="sm" onClick={format} disabled={Boolean(jsonError)}>
              Format
            </Button>
          ) : null
        }
      >
        {textual ? (
          <div className="space-y-1">
            <CodeEditor value={body} onChange={setBody} language={isJson ? 'json' : 'text'} label="Message body" />
            {jsonError ? (
              <p role="alert" className="text-xs text-red-700" data-testid="json-error">
                Not valid JSON: {jsonError}
              </p>
            ) : (
              <p className="text-xs text-zinc-500">{isJson ? 'Valid JSON.' : 'Plain text.'} The body is saved exactly as written.</p>
            )}
          </div>
        ) : (
          <div className="space-y-2 text-xs text-zinc-600">
            <p>
              {base.truncated ? `This body (${formatBytes(base.size)}) is too large to edit here` : `This body is binary (${formatBytes(base.size)})`}: replace it by uploading a file.
            </p>
            <input type="file" aria-label="Replacement body" onChange={(e) => void onFile(e.target.files?.[0])} className="text-xs" />
            {upload && (
              <p>
                Replacement: <span className="font-mono">{visibleText(upload.name)}</span>, {formatBytes(upload.size)}
              </p>
            )}
          </div>
        )}
      </Panel>

      <div className="grid gap-3 xl:grid-cols-[minmax(0,3fr)_minmax(0,2fr)]">
        <Panel title="Headers" actions={<Button size="sm" onClick={() => setRows([...rows, { key: nextKey++, name: '', type: 'S', text: '' }])}>Add header</Button>} bodyClassName="p-0">
          <table className="w-full table-fixed border-collapse text-xs" aria-label="Headers">
            <thead className="text-left text-[11px] text-zinc-500">
              <tr>
                <th className="w-[32%] border-b border-zinc-200 px-2 py-1 font-medium">Name</th>
                <th className="w-40 border-b border-zinc-200 px-2 py-1 font-medium">Type</th>
                <th className="border-b border-zinc-200 px-2 py-1 font-medium">Value</th>
                <th className="w-8 border-b border-zinc-200" />
              </tr>
            </thead>
            <tbody>
              {rows.map((row, i) => {
                const update = (patch: Partial<HeaderRow>) => setRows(rows.map((r) => (r.key === row.key ? { ...r, ...patch } : r)))
                const check = row.original && toEditable(row.original).type === row.type && toEditable(row.original).text === row.text ? null : fromEditable(row.type, row.text)
                const error = check && 'error' in check ? check.error : null
                return (
                  <tr key={row.key} className="align-top">
                    <td className="border-b border-zinc-100 px-1 py-1">
                      <Input className="w-full font-mono text-xs" aria-label={`Header ${i + 1} name`} value={row.name} onChange={(e) => update({ name: e.target.value })} />
                    </td>
                    <td className="border-b border-zinc-100 px-1 py-1">
                      <Select className="w-full text-xs" aria-label={`Header ${i + 1} type`} options={EDITABLE_TYPES} value={row.type} onChange={(e) => update({ type: e.target.value })} />
                    </td>
                    <td className="border-b border-zinc-100 px-1 py-1">
                      <Input className="w-full font-mono text-xs" aria-label={`Header ${i + 1} value`} value={row.text} disabled={row.type === 'V'} invalid={Boolean(error)} onChange={(e) => update({ text: e.target.value })} />
                      {error && <span className="text-[11px] text-red-700">{error}</span>}
                    </td>
                    <td className="border-b border-zinc-100 px-1 py-1 text-center">
                      <button type="button" aria-label={`Remove header ${visibleText(row.name)}`} className="rounded px-1 text-zinc-400 hover:bg-zinc-100 hover:text-red-700" onClick={() => setRows(rows.filter((r) => r.key !== row.key))}>
                        ×
                      </button>
                    </td>
                  </tr>
                )
              })}
              {rows.length === 0 && (
                <tr>
                  <td colSpan={4} className="px-2 py-2 text-zinc-500">
                    No headers.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
          <p className="px-2 py-1.5 text-[11px] text-zinc-500">x-death, x-first-death-*, x-last-death-* and x-lazarus-* are the broker&apos;s and Lazarus&apos; own: a replay never sends them back.</p>
        </Panel>
        <Panel title="Properties">
          <div className="grid grid-cols-[8rem_minmax(0,1fr)] items-center gap-x-2 gap-y-1 text-xs">
            {PROPERTY_FIELDS.map((key) => (
              <label key={key} className="contents">
                <span className="text-zinc-500">{key}</span>
                <Input className="font-mono text-xs" inputMode={NUMBER_PROPERTIES.has(key) ? 'numeric' : undefined} value={props[key]} onChange={(e) => setProps({ ...props, [key]: e.target.value })} />
              </label>
            ))}
          </div>
        </Panel>
      </div>

      <Panel
        title="Changes"
        actions={
          base.revision === 0 ? (
            <span className="text-xs text-zinc-500">against the original</span>
          ) : (
            <Tabs
              label="Compare with"
              value={compareTo}
              onChange={setCompareTo}
              tabs={[
                { value: 'previous', label: `Revision ${base.revision}` },
                { value: 'original', label: 'Original' },
              ]}
            />
          )
        }
      >
        <div className="space-y-3">
          {textual && against.text !== null ? (
            <BodyDiff before={against.text} after={body} />
          ) : upload ? (
            <p className="text-xs text-zinc-700">Body replaced by an upload of {formatBytes(upload.size)} (was {formatBytes(against.size)}).</p>
          ) : (
            <p className="text-xs text-zinc-500">The body is unchanged.</p>
          )}
          {'error' in built ? <p className="text-xs text-red-700">{built.error}</p> : <FieldChanges diff={{ headers: changes, properties: propChanges }} />}
        </div>
      </Panel>

      {replayOpen && <ReplayPlanDialog selection={{ ids: [m.id] }} subject={`message #${m.id}, revision ${saved ?? ''}`} onClose={() => setReplayOpen(false)} />}
    </div>
  )
}
