'use client'

import Link from 'next/link'
import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { Input, Select } from '@/components/ui/fields'
import { SearchBox } from '@/components/ui/search-box'
import { TIME_RANGES, type MessageFilterKey } from '@/lib/client/filters'
import { visibleText } from '@/lib/client/format'
import { useTimeFormat } from '@/lib/client/use-display-prefs'
import { useSources } from '@/lib/client/use-sources'
import { FAILURE_KINDS, MESSAGE_STATUSES } from '@/lib/shared/schemas/message-filter'
import { FieldFilters } from './field-filters'
import { SavedViews } from './saved-views'

type Values = Partial<Record<MessageFilterKey, string>>
type Update = (changes: Record<string, string | null>, mode?: 'push' | 'replace') => void

const options = (values: readonly string[]) => values.map((v) => ({ value: v, label: v }))

/** A free-text filter that commits on Enter or when it loses focus, so each keystroke is not a request. */
function TextFilter({ label, value, onCommit, className }: { label: string; value: string; onCommit: (v: string) => void; className?: string }) {
  const [text, setText] = useState(value)
  // A new value from the URL (back, a shared link, "clear") replaces what was typed, during render as React advises.
  const [shown, setShown] = useState(value)
  if (value !== shown) {
    setShown(value)
    setText(value)
  }
  return (
    <Input
      aria-label={label}
      placeholder={label}
      value={text}
      maxLength={1024}
      className={className}
      onChange={(e) => setText(e.target.value)}
      onBlur={() => text.trim() !== value && onCommit(text.trim())}
      onKeyDown={(e) => {
        if (e.key === 'Enter') onCommit(text.trim())
        if (e.key === 'Escape') e.currentTarget.blur()
      }}
    />
  )
}

function Chip({ label, value, onClear, href }: { label: string; value: string; onClear: () => void; href?: string }) {
  const text = visibleText(value)
  return (
    <span className="inline-flex h-7 max-w-72 items-center gap-1 rounded-md border border-zinc-300 bg-white pl-2 text-xs">
      <span className="shrink-0 text-zinc-500">{label}</span>
      {href ? (
        <Link href={href} className="truncate font-mono text-zinc-800 hover:underline" title={text}>
          {text}
        </Link>
      ) : (
        <span className="truncate font-mono text-zinc-800" title={text}>
          {text}
        </span>
      )}
      <button type="button" onClick={onClear} aria-label={`Remove ${label} filter`} className="h-full rounded-r-md px-1.5 text-zinc-500 hover:bg-zinc-100 hover:text-zinc-900">
        ×
      </button>
    </span>
  )
}

/**
 * The message list's filters, all in the URL. `fixed` keys (a group page's group) are not offered. `fields` are the
 * header, property and x-death filters (`h.tenant=acme`); `savedViews` offers the user's saved views of the list.
 */
export function MessageFilters({
  values,
  fields = {},
  update,
  fixed = [],
  savedViews = false,
  sampleGroup,
}: {
  values: Values
  fields?: Record<string, string>
  update: Update
  fixed?: readonly MessageFilterKey[]
  savedViews?: boolean
  /** A group page's group, whose recent JSON bodies the body field filter offers pointers from. */
  sampleGroup?: string
}) {
  const offer = (key: MessageFilterKey) => !fixed.includes(key)
  const time = useTimeFormat()
  const sources = useSources()
  const sourceOptions = (sources.data?.sources ?? []).map((s) => ({ value: s.id, label: s.queue }))
  // The JetStream filters only where there are JetStream sources: most installations have none.
  const jetStream = (sources.data?.sources ?? []).some((s) => s.kind === 'jetstream')
  if (values.source && !sourceOptions.some((o) => o.value === values.source)) sourceOptions.push({ value: values.source, label: `source ${values.source}` })
  const active = [...(Object.keys(values) as MessageFilterKey[]).filter((k) => !fixed.includes(k)), ...Object.keys(fields)]

  return (
    <div className="flex flex-wrap items-center gap-2" role="search" aria-label="Message filters">
      {savedViews && <SavedViews filters={{ ...values, ...fields } as Record<string, string>} />}
      <SearchBox className="w-72" value={values.q ?? ''} onChange={(v) => update({ q: v || null }, 'replace')} placeholder="Search errors, bodies, entities" label="Search messages" />
      <Select aria-label="Source" value={values.source ?? ''} placeholder="All sources" options={sourceOptions} onChange={(e) => update({ source: e.target.value || null })} />
      <Select aria-label="Status" value={values.status ?? ''} placeholder="Any status" options={options(MESSAGE_STATUSES)} onChange={(e) => update({ status: e.target.value || null })} />
      <Select aria-label="Failure kind" value={values.failureKind ?? ''} placeholder="Any kind" options={options(FAILURE_KINDS)} onChange={(e) => update({ failureKind: e.target.value || null })} />
      {offer('range') && (
      <Select
        aria-label="Time range"
        value={values.range ?? ''}
        placeholder="All time"
        options={TIME_RANGES.map((r) => ({ value: r.value, label: r.label }))}
        onChange={(e) => update({ range: e.target.value || null, from: null, to: null })}
      />
      )}
      <TextFilter label="Service" className="w-28" value={values.service ?? ''} onCommit={(v) => update({ service: v || null })} />
      <TextFilter label="Version" className="w-24" value={values.serviceVersion ?? ''} onCommit={(v) => update({ serviceVersion: v || null })} />
      <TextFilter label="Entity" className="w-36" value={values.entity ?? ''} onCommit={(v) => update({ entity: v || null })} />
      {(jetStream || values.stream || values.subject) && (
        <>
          <TextFilter label="Stream" className="w-28" value={values.stream ?? ''} onCommit={(v) => update({ stream: v || null })} />
          <TextFilter label="Subject" className="w-36" value={values.subject ?? ''} onCommit={(v) => update({ subject: v || null })} />
        </>
      )}
      <FieldFilters fields={fields} update={update} sample={{ group: sampleGroup ?? values.group, source: values.source }} />
      {offer('group') && values.group && <Chip label="group" value={`#${values.group}`} href={`/groups/${values.group}`} onClear={() => update({ group: null })} />}
      {values.traceId && <Chip label="trace" value={values.traceId} onClear={() => update({ traceId: null })} />}
      {offer('from') && values.from && <Chip label="from" value={`${time.absolute(values.from)} ${time.zoneLabel(values.from)}`} onClear={() => update({ from: null })} />}
      {offer('to') && values.to && <Chip label="to" value={`${time.absolute(values.to)} ${time.zoneLabel(values.to)}`} onClear={() => update({ to: null })} />}
      {active.length > 0 && (
        <Button variant="ghost" onClick={() => update(Object.fromEntries(active.map((k) => [k, null])))}>
          Clear filters
        </Button>
      )}
    </div>
  )
}
