'use client'

import { useState, type FormEvent } from 'react'
import { Button } from '@/components/ui/button'
import { Input, Select } from '@/components/ui/fields'
import { visibleText } from '@/lib/client/format'
import {
  describeFieldFilter,
  fieldConditionSchema,
  fieldFilterParam,
  FILTER_PROPERTIES,
  parseFieldFilter,
  type FieldCondition,
} from '@/lib/shared/schemas/field-filter'

type Update = (changes: Record<string, string | null>, mode?: 'push' | 'replace') => void
type Scope = FieldCondition['on']

const SCOPES = [
  { value: 'header', label: 'Header' },
  { value: 'property', label: 'Property' },
  { value: 'death', label: 'x-death' },
]
const OPS: Record<string, { value: FieldCondition['op']; label: string }[]> = {
  header: [
    { value: 'eq', label: '=' },
    { value: 'prefix', label: 'starts with' },
    { value: 'exists', label: 'exists' },
    { value: 'missing', label: 'does not exist' },
  ],
  count: [
    { value: 'gte', label: '≥' },
    { value: 'lte', label: '≤' },
  ],
  text: [{ value: 'eq', label: '=' }],
}
const opsFor = (scope: Scope, name: string) => (scope === 'death' ? (name === 'count' ? OPS.count : OPS.text) : OPS.header)

/** The header, property and x-death filters of the URL as chips, each removable; one the API would refuse is marked. */
function FieldChips({ fields, update }: { fields: Record<string, string>; update: Update }) {
  return Object.entries(fields).map(([key, value]) => {
    const parsed = fieldConditionSchema.safeParse(parseFieldFilter(key, value))
    const text = visibleText(parsed.success ? describeFieldFilter(parsed.data) : `${key}=${value}`)
    return (
      <span
        key={key}
        className={`inline-flex h-7 max-w-80 items-center gap-1 rounded-md border pl-2 font-mono text-xs ${parsed.success ? 'border-zinc-300 bg-white text-zinc-800' : 'border-red-300 bg-red-50 text-red-800'}`}
        title={parsed.success ? text : `Not a valid filter: ${text}`}
      >
        <span className="truncate">{text}</span>
        <button type="button" onClick={() => update({ [key]: null })} aria-label={`Remove filter ${text}`} className="h-full rounded-r-md px-1.5 text-zinc-500 hover:bg-zinc-100 hover:text-zinc-900">
          ×
        </button>
      </span>
    )
  })
}

/** A one-line form for a header, property or x-death filter: scope, name, operator, value. Enter adds, Escape closes. */
function AddFieldFilter({ onAdd, onClose }: { onAdd: (condition: FieldCondition) => void; onClose: () => void }) {
  const [scope, setScope] = useState<Scope>('header')
  const [name, setName] = useState('')
  const [op, setOp] = useState<FieldCondition['op']>('eq')
  const [value, setValue] = useState('')
  const [error, setError] = useState<string | null>(null)
  const ops = opsFor(scope, name)
  const needsValue = op !== 'exists' && op !== 'missing'

  const changeScope = (next: Scope) => {
    setScope(next)
    const firstName = next === 'property' ? FILTER_PROPERTIES[1] : next === 'death' ? 'count' : ''
    setName(firstName)
    setOp(opsFor(next, firstName)[0].value)
    setError(null)
  }
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const parsed = fieldConditionSchema.safeParse({ on: scope, name: name.trim(), op, ...(needsValue ? { value: value.trim() } : {}) })
    if (!parsed.success) {
      setError(!name.trim() ? 'Name the header' : needsValue && !value.trim() ? 'Enter a value' : op === 'gte' || op === 'lte' ? 'The count is a whole number' : 'Not a valid filter')
      return
    }
    onAdd(parsed.data)
  }

  return (
    <form
      onSubmit={submit}
      onKeyDown={(e) => e.key === 'Escape' && onClose()}
      className="flex flex-wrap items-center gap-1.5 rounded-md border border-zinc-200 bg-zinc-50 px-2 py-1.5"
      aria-label="Add a header, property or x-death filter"
    >
      <Select aria-label="Filter on" value={scope} options={SCOPES} onChange={(e) => changeScope(e.target.value as Scope)} />
      {scope === 'header' ? (
        <Input aria-label="Header name" placeholder="header name, e.g. tenant" className="w-44 font-mono" value={name} maxLength={255} autoFocus onChange={(e) => setName(e.target.value)} />
      ) : (
        <Select
          aria-label={scope === 'property' ? 'Property' : 'x-death field'}
          value={name}
          options={(scope === 'property' ? FILTER_PROPERTIES : (['count', 'reason', 'queue'] as const)).map((n) => ({ value: n, label: n }))}
          onChange={(e) => {
            setName(e.target.value)
            setOp(opsFor(scope, e.target.value)[0].value)
          }}
        />
      )}
      <Select aria-label="Operator" value={op} options={ops} onChange={(e) => setOp(e.target.value as FieldCondition['op'])} />
      {needsValue && (
        <Input
          aria-label="Value"
          placeholder={op === 'gte' || op === 'lte' ? 'count' : 'value'}
          inputMode={op === 'gte' || op === 'lte' ? 'numeric' : undefined}
          className="w-40 font-mono"
          value={value}
          maxLength={1024}
          invalid={error !== null}
          onChange={(e) => {
            setValue(e.target.value)
            setError(null)
          }}
        />
      )}
      <Button type="submit" variant="primary">
        Add
      </Button>
      <Button variant="ghost" onClick={onClose}>
        Cancel
      </Button>
      {error && (
        <span role="alert" className="text-xs text-red-700">
          {error}
        </span>
      )}
    </form>
  )
}

/** Filters on any header, AMQP property or x-death field, kept in the URL as `h.tenant=acme` and the like. */
export function FieldFilters({ fields, update }: { fields: Record<string, string>; update: Update }) {
  const [adding, setAdding] = useState(false)
  return (
    <>
      <FieldChips fields={fields} update={update} />
      {adding ? (
        <AddFieldFilter
          onClose={() => setAdding(false)}
          onAdd={(condition) => {
            const [key, value] = fieldFilterParam(condition)
            update({ [key]: value })
            setAdding(false)
          }}
        />
      ) : (
        <Button variant="ghost" onClick={() => setAdding(true)} title="Filter on a header, an AMQP property or x-death">
          + Header filter
        </Button>
      )}
    </>
  )
}
