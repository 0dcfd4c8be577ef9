'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { Dialog } from '@/components/ui/dialog'
import { Field, Input, Select } from '@/components/ui/fields'
import { InlineError } from '@/components/ui/states'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { EDITABLE_TYPES, fromEditable } from '@/lib/client/typed-values'
import { useBulkEdit } from '@/lib/client/use-revisions'
import type { SelectionInput } from '@/lib/client/use-replays'
import type { BulkEditOperation } from '@/lib/shared/schemas/revision'
import { FieldChanges, StoredBodyDiff } from './revision-diff'

type Kind = BulkEditOperation['type']

const KINDS = [
  { value: 'json-patch', label: 'JSON Patch (RFC 6902) on JSON bodies' },
  { value: 'set-header', label: 'Set a header' },
  { value: 'remove-header', label: 'Remove a header' },
] as const

/** The operation the form describes, or why it is not one yet. */
function operationOf(kind: Kind, name: string, type: string, value: string, patch: string): { operation: BulkEditOperation } | { error: string } {
  if (kind === 'json-patch') {
    try {
      const parsed = JSON.parse(patch) as unknown
      if (!Array.isArray(parsed) || parsed.length === 0) return { error: 'A JSON Patch is an array of operations' }
      return { operation: { type: 'json-patch', patch: parsed as Extract<BulkEditOperation, { type: 'json-patch' }>['patch'] } }
    } catch (error) {
      return { error: `Not JSON: ${(error as Error).message}` }
    }
  }
  if (!name) return { error: 'Name the header' }
  if (kind === 'remove-header') return { operation: { type: 'remove-header', name } }
  const typed = fromEditable(type, value)
  if ('error' in typed) return { error: `Value: ${typed.error}` }
  return { operation: { type: 'set-header', name, value: typed.value as Record<string, unknown> } }
}

/**
 * One edit for every message of a selection: preview first (the diffs of a few messages and how many the operation
 * does not apply to, with why), then apply, which writes one revision per message and one audit entry.
 */
export function BulkEditDialog({ selection, subject, onClose }: { selection: SelectionInput; subject: string; onClose: () => void }) {
  const [kind, setKind] = useState<Kind>('json-patch')
  const [name, setName] = useState('')
  const [type, setType] = useState('S')
  const [value, setValue] = useState('')
  const [patch, setPatch] = useState('[\n  { "op": "replace", "path": "/status", "value": "RETRY" }\n]')
  const edit = useBulkEdit()
  const built = operationOf(kind, name, type, value, patch)
  const result = edit.data
  const previewed = result?.preview === true
  const run = (preview: boolean) => 'operation' in built && edit.mutate({ selection, operation: built.operation, preview })
  const changeForm = (fn: () => void) => {
    fn()
    edit.reset()
  }

  if (result && !result.preview) {
    return (
      <Dialog title="Bulk edit applied" description={subject} onClose={onClose} onSubmit={onClose} footer={<Button type="submit" variant="primary">Done</Button>}>
        <p data-testid="bulk-edit-result">
          {plural(result.edited, 'revision')} written; {formatCount(result.matched - result.applicable)} not applicable. A replay of these messages now sends the new revisions.
        </p>
      </Dialog>
    )
  }

  return (
    <Dialog
      size="lg"
      title="Bulk edit"
      description={subject}
      onClose={onClose}
      // Enter previews, never applies: applying takes the button.
      onSubmit={() => run(true)}
      canSubmit={'operation' in built && !edit.isPending}
      footer={
        <>
          <span className="mr-auto min-w-0 truncate text-xs" aria-live="polite">
            {edit.error ? <InlineError error={edit.error} /> : 'error' in built ? <span className="text-red-700">{built.error}</span> : <span className="text-zinc-500">The stored messages never change: each edit is a new revision.</span>}
          </span>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" disabled={!('operation' in built) || edit.isPending}>
            Preview
          </Button>
          <Button variant="primary" onClick={() => run(false)} disabled={!previewed || !('operation' in built) || edit.isPending || result.applicable === 0}>
            {previewed ? `Apply to ${plural(result.applicable, 'message')}` : 'Apply'}
          </Button>
        </>
      }
    >
      <div className="space-y-3">
        <Field label="Operation">
          <Select options={KINDS} value={kind} onChange={(e) => changeForm(() => setKind(e.target.value as Kind))} />
        </Field>
        {kind === 'json-patch' ? (
          <Field label="JSON Patch" hint="Applied to each JSON body; a message it cannot apply to is left as it is and counted.">
            <textarea rows={5} value={patch} onChange={(e) => changeForm(() => setPatch(e.target.value))} className="rounded-md border border-zinc-300 px-2 py-1.5 font-mono text-xs focus:border-brand focus:outline-none" aria-label="JSON Patch" />
          </Field>
        ) : (
          <div className="grid grid-cols-[minmax(0,1fr)_10rem_minmax(0,1fr)] gap-2">
            <Field label="Header">
              <Input className="font-mono" value={name} onChange={(e) => changeForm(() => setName(e.target.value))} />
            </Field>
            {kind === 'set-header' && (
              <>
                <Field label="Type">
                  <Select options={EDITABLE_TYPES} value={type} onChange={(e) => changeForm(() => setType(e.target.value))} />
                </Field>
                <Field label="Value">
                  <Input className="font-mono" value={value} disabled={type === 'V'} onChange={(e) => changeForm(() => setValue(e.target.value))} />
                </Field>
              </>
            )}
          </div>
        )}
        {previewed && (
          <section className="space-y-2" data-testid="bulk-edit-preview">
            <p className="text-xs">
              <strong className="tabular-nums">{formatCount(result.applicable)}</strong> of {formatCount(result.matched)} messages change;{' '}
              <strong className="tabular-nums" data-testid="bulk-not-applicable">{formatCount(result.matched - result.applicable)}</strong> cannot.
            </p>
            {result.notApplicable.length > 0 && (
              <ul className="list-disc pl-5 text-xs text-zinc-600">
                {result.notApplicable.map((r) => (
                  <li key={r.reason}>
                    {formatCount(r.count)}: {visibleText(r.reason)}
                  </li>
                ))}
              </ul>
            )}
            {result.sample.map((s) => (
              <div key={s.id} className="space-y-1 rounded border border-zinc-200 p-2">
                <p className="text-xs font-medium">Message #{s.id}</p>
                {s.diff.body && <StoredBodyDiff body={s.diff.body} />}
                {(s.diff.headers.length > 0 || s.diff.properties.length > 0) && <FieldChanges diff={s.diff} />}
              </div>
            ))}
          </section>
        )}
      </div>
    </Dialog>
  )
}
