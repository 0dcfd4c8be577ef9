'use client'

import { useMemo, useState } from 'react'
import { Button } from '@/components/ui/button'
import { Checkbox, Input } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { Skeleton } from '@/components/ui/skeleton'
import { ErrorState } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { ApiError, errorMessage } from '@/lib/client/api'
import { useRedactionPreview, useRedactionSettings, useSaveRedactionRules } from '@/lib/client/use-redaction'
import type { RedactionDetectorDto, RedactionRuleInput, RedactionSettingsDto } from '@/lib/shared/schemas/redaction'

type EditableRule = { key: number; value: string; enabled: boolean; description: string }
type Draft = { keys: EditableRule[]; detectors: Record<string, boolean>; patterns: EditableRule[] }

let nextKey = 1
const editable = (r: { value: string; enabled: boolean; description?: string | null }): EditableRule => ({
  key: nextKey++,
  value: r.value,
  enabled: r.enabled,
  description: r.description ?? '',
})

function draftOf(settings: RedactionSettingsDto): Draft {
  return {
    keys: settings.rules.filter((r) => r.kind === 'key').map(editable),
    detectors: Object.fromEntries(settings.detectors.map((d) => [d.name, settings.rules.some((r) => r.kind === 'detector' && r.value === d.name && r.enabled)])),
    patterns: settings.rules.filter((r) => r.kind === 'pattern').map(editable),
  }
}

/** The rule list PUT /api/settings/redaction takes, with each rule's row for mapping field errors back. */
function rulesOf(draft: Draft, detectors: RedactionDetectorDto[]): { rules: RedactionRuleInput[]; rows: (number | string)[] } {
  const rules: RedactionRuleInput[] = []
  const rows: (number | string)[] = []
  const add = (kind: RedactionRuleInput['kind'], r: EditableRule) => {
    rules.push({ kind, value: r.value.trim(), enabled: r.enabled, description: r.description.trim() || null })
    rows.push(r.key)
  }
  draft.keys.forEach((r) => add('key', r))
  for (const d of detectors) {
    rules.push({ kind: 'detector', value: d.name, enabled: draft.detectors[d.name] ?? false })
    rows.push(d.name)
  }
  draft.patterns.forEach((r) => add('pattern', r))
  return { rules, rows }
}

/** Field errors of a 400 ("rules.3.value: …"), by the row they belong to. */
function errorsByRow(error: unknown, rows: (number | string)[]): Map<number | string, string> {
  const out = new Map<number | string, string>()
  if (!(error instanceof ApiError)) return out
  for (const [path, message] of Object.entries(error.fieldErrors())) {
    const match = /^rules\.(\d+)/.exec(path)
    if (match) out.set(rows[Number(match[1])], message)
  }
  return out
}

const SAMPLE = `{"customer":{"email":"jane@example.com","Password":"hunter2"},"card":"4111 1111 1111 1111"}
Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl
amqp://app:s3cret@rabbit:5672 token=abc123`

function RuleRows({
  title,
  rows,
  onChange,
  errors,
  placeholder,
  addLabel,
  mono,
}: {
  title: string
  rows: EditableRule[]
  onChange: (rows: EditableRule[]) => void
  errors: Map<number | string, string>
  placeholder: string
  addLabel: string
  mono?: boolean
}) {
  const update = (key: number, change: Partial<EditableRule>) => onChange(rows.map((r) => (r.key === key ? { ...r, ...change } : r)))
  return (
    <fieldset className="space-y-1.5">
      <legend className="sr-only">{title}</legend>
      {rows.length === 0 && <p className="text-xs text-zinc-500">None.</p>}
      {rows.map((r, index) => (
        <div key={r.key} className="flex flex-wrap items-start gap-2">
          <Checkbox checked={r.enabled} onChange={(e) => update(r.key, { enabled: e.target.checked })} aria-label={`${title} ${index + 1} enabled`} className="mt-1.5" />
          <div className="flex min-w-0 flex-1 flex-col gap-0.5">
            <Input
              value={r.value}
              onChange={(e) => update(r.key, { value: e.target.value })}
              placeholder={placeholder}
              aria-label={`${title} ${index + 1}`}
              invalid={errors.has(r.key)}
              className={mono ? 'font-mono' : undefined}
              spellCheck={false}
            />
            {errors.has(r.key) && (
              <span role="alert" className="text-xs text-red-700">
                {errors.get(r.key)}
              </span>
            )}
          </div>
          <Input
            value={r.description}
            onChange={(e) => update(r.key, { description: e.target.value })}
            placeholder="Note (optional)"
            aria-label={`${title} ${index + 1} note`}
            className="w-64 max-w-full"
          />
          <Button variant="ghost" aria-label={`Remove ${title.toLowerCase()} ${index + 1}`} onClick={() => onChange(rows.filter((x) => x.key !== r.key))}>
            Remove
          </Button>
        </div>
      ))}
      <Button onClick={() => onChange([...rows, editable({ value: '', enabled: true })])}>{addLabel}</Button>
    </fieldset>
  )
}

function Editor({ settings }: { settings: RedactionSettingsDto }) {
  const [draft, setDraft] = useState<Draft>(() => draftOf(settings))
  const [sample, setSample] = useState(SAMPLE)
  const save = useSaveRedactionRules()
  const preview = useRedactionPreview()
  const { rules, rows } = useMemo(() => rulesOf(draft, settings.detectors), [draft, settings.detectors])
  const saved = useMemo(() => JSON.stringify(rulesOf(draftOf(settings), settings.detectors).rules), [settings])
  const dirty = JSON.stringify(rules) !== saved
  const errors = errorsByRow(save.error ?? preview.error, rows)
  const generalError = (save.error ?? preview.error) && errors.size === 0 ? (save.error ?? preview.error) : null

  const submit = () =>
    save.mutate({ rules }, { onSuccess: (next) => setDraft(draftOf(next)) })

  return (
    <div className="space-y-3">
      <Panel title="Secret keys">
        <p className="mb-2 text-xs text-zinc-500">
          The whole value under a matching key is replaced, at any depth of JSON bodies, properties and headers, and in
          <code className="mx-1">key=value</code>, <code className="mx-1">key: value</code> and <code className="mx-1">&lt;key&gt;…&lt;/key&gt;</code> text.
          Letter case, <code>-</code>, <code>_</code> and <code>.</code> are ignored; <code>*</code> matches anything.
        </p>
        <RuleRows title="Key" rows={draft.keys} onChange={(keys) => setDraft({ ...draft, keys })} errors={errors} placeholder="*password*" addLabel="Add key" mono />
      </Panel>
      <Panel title="Value detectors">
        <ul className="space-y-1.5">
          {settings.detectors.map((d) => (
            <li key={d.name}>
              <label className="flex items-start gap-2">
                <Checkbox checked={draft.detectors[d.name] ?? false} onChange={(e) => setDraft({ ...draft, detectors: { ...draft.detectors, [d.name]: e.target.checked } })} className="mt-0.5" />
                <span className="min-w-0">
                  <span className="font-medium text-zinc-900">{d.label}</span> <span className="text-xs text-zinc-500">{d.description}</span>
                  <span className="block font-mono text-xs break-all text-zinc-400">{d.example}</span>
                  {errors.has(d.name) && (
                    <span role="alert" className="block text-xs text-red-700">
                      {errors.get(d.name)}
                    </span>
                  )}
                </span>
              </label>
            </li>
          ))}
        </ul>
      </Panel>
      <Panel title="Custom patterns">
        <p className="mb-2 text-xs text-zinc-500">Regular expressions (JavaScript syntax without backreferences or lookaround, case-insensitive), matched in linear time by RE2; every match is replaced.</p>
        <RuleRows title="Pattern" rows={draft.patterns} onChange={(patterns) => setDraft({ ...draft, patterns })} errors={errors} placeholder="ORD-\d{6}" addLabel="Add pattern" mono />
      </Panel>
      <div className="flex flex-wrap items-center gap-2">
        <Button variant="primary" size="md" onClick={submit} disabled={!dirty || save.isPending}>
          {save.isPending ? 'Saving…' : 'Save rules'}
        </Button>
        <Button size="md" onClick={() => setDraft(draftOf(settings))} disabled={!dirty || save.isPending}>
          Discard changes
        </Button>
        {save.isSuccess && !dirty && (
          <span role="status" className="text-xs text-emerald-700">
            Saved. The next export uses these rules.
          </span>
        )}
        {generalError ? (
          <span role="alert" className="text-xs text-red-700">
            {errorMessage(generalError)}
          </span>
        ) : null}
        <span className="ml-auto text-xs text-zinc-500">
          {settings.updatedAt ? (
            <>
              Last changed <RelativeTime iso={settings.updatedAt} />
              {settings.updatedBy ? ` by ${settings.updatedBy}` : ''}
            </>
          ) : null}
        </span>
      </div>
      <Panel title="Try the rules" actions={<Button onClick={() => preview.mutate({ sample, rules })} disabled={preview.isPending}>{preview.isPending ? 'Checking…' : 'Preview'}</Button>}>
        <div className="grid gap-3 md:grid-cols-2">
          <label className="flex flex-col gap-1">
            <span className="text-xs font-medium text-zinc-600">Sample (a body, header or log line)</span>
            <textarea value={sample} onChange={(e) => setSample(e.target.value)} spellCheck={false} className="h-40 rounded-md border border-zinc-300 p-2 font-mono text-xs" />
          </label>
          <div className="flex flex-col gap-1">
            <span className="text-xs font-medium text-zinc-600">With these rules (unsaved edits included)</span>
            <pre aria-label="Redacted sample" className="h-40 overflow-auto rounded-md border border-zinc-200 bg-zinc-50 p-2 font-mono text-xs whitespace-pre-wrap break-all">
              {preview.data ? preview.data.redacted : 'Press Preview.'}
            </pre>
          </div>
        </div>
      </Panel>
    </div>
  )
}

/** The redaction rules every export and "Copy as ticket" applies: secret keys, value detectors, custom patterns. */
export function RedactionSettings() {
  const { data, error, isPending, refetch } = useRedactionSettings()
  if (isPending) return <Skeleton className="h-64 w-full" />
  if (error || !data) return <ErrorState title="Could not load the redaction rules" error={error} onRetry={() => void refetch()} />
  return <Editor settings={data} />
}
