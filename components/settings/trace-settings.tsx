'use client'

import { useState } from 'react'
import { Field, Input } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { Skeleton } from '@/components/ui/skeleton'
import { ErrorState } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { visibleText } from '@/lib/client/format'
import { useSaveTraceSettings, useTraceSettings } from '@/lib/client/use-traces'
import { traceUrlTemplateSchema } from '@/lib/shared/schemas/trace-settings'
import { SaveDiscard } from './save-discard'

/**
 * The "Open trace" link template (docs/ARCHITECTURE.md#traces): an http(s) URL with {traceId} and {spanId}. Stored, it
 * wins over LAZARUS_TRACE_URL_TEMPLATE; emptied and saved, the environment's applies again.
 */
export function TraceSettings() {
  const query = useTraceSettings()
  const save = useSaveTraceSettings()
  const [draft, setDraft] = useState<string | null>(null)
  if (query.error) return <ErrorState title="Could not load the trace link setting" error={query.error} onRetry={() => void query.refetch()} />
  const stored = query.data?.urlTemplate ?? ''
  const shown = draft ?? stored
  const parsed = shown.trim() === '' ? null : traceUrlTemplateSchema.safeParse(shown)
  const invalid = draft !== null && parsed !== null && !parsed.success ? (parsed.error.issues[0]?.message ?? 'not a valid template') : undefined
  const dirty = draft !== null && draft.trim() !== stored
  const submit = () => {
    if (!dirty || invalid) return
    save.mutate({ urlTemplate: parsed?.success ? parsed.data : null }, { onSuccess: () => setDraft(null) })
  }
  const environment = query.data?.environmentTemplate ?? null
  return (
    <Panel title="Trace links">
      <p className="mb-2 text-xs text-zinc-500">
        A message whose headers carry a trace (<code>traceparent</code>, <code>b3</code>, <code>uber-trace-id</code>) shows &ldquo;Open trace&rdquo; with
        this link, <code>{'{traceId}'}</code> and <code>{'{spanId}'}</code> filled in. An http or https URL; saved here it wins over{' '}
        <code>LAZARUS_TRACE_URL_TEMPLATE</code>, and saved empty the environment&apos;s applies again.
      </p>
      {query.isPending ? (
        <Skeleton className="h-[52px] w-full" />
      ) : (
        <form
          className="flex flex-wrap items-start gap-x-3 gap-y-2"
          onSubmit={(e) => {
            e.preventDefault()
            submit()
          }}
        >
          <Field label="Link template" error={invalid} className="min-w-0 flex-1 basis-96">
            <Input
              value={shown}
              invalid={invalid !== undefined}
              onChange={(e) => setDraft(e.target.value)}
              aria-label="Trace link template"
              placeholder={environment ?? 'https://grafana.example.com/explore?left=…{traceId}…'}
              className="font-mono text-xs"
            />
          </Field>
          <div className="mt-5 flex items-center gap-2">
            <SaveDiscard dirty={dirty} disabled={invalid !== undefined} saving={save.isPending} error={save.error} onDiscard={() => setDraft(null)} />
          </div>
        </form>
      )}
      {query.data && (
        <p className="mt-2 text-xs text-zinc-500" data-testid="trace-template-in-effect">
          {query.data.effectiveTemplate === null
            ? 'No template: trace ids are shown without a link.'
            : query.data.urlTemplate !== null
              ? <>In effect: this one, set by {visibleText(query.data.updatedBy ?? 'unknown')} <RelativeTime iso={query.data.updatedAt} />.</>
              : <>In effect: the environment&apos;s, <code className="break-all">{visibleText(environment ?? '')}</code>.</>}
        </p>
      )}
    </Panel>
  )
}
