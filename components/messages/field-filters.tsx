'use client'

import { useId, useState, type FormEvent } from 'react'
import { Button } from '@/components/ui/button'
import { Input, Select } from '@/components/ui/fields'
import { visibleText } from '@/lib/client/format'
import { useBodyFields } from '@/lib/client/use-body-fields'
import { pointerProblem } from '@/lib/shared/json-pointer'
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
/** Whose recent JSON bodies the body field's autocompletion reads: a group's, a source's, or every visible message's. */
type BodyFieldSample = { group?: string; source?: string }

const SCOPES = [
  { value: 'header', label: 'Header' },
  { value: 'property', label: 'Property' },
  { value: 'body', label: 'Body field' },
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

/** The header, property, body field and x-death filters of the URL as chips, each removable; one the API would refuse is marked. */
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

/**
 * A one-line form for a header, property, body field or x-death filter: scope, name (a body field's JSON Pointer, with
 * the pointers of recent JSON bodies offered), operator, value. Enter adds, Escape closes.
 */
function AddFieldFilter({ onAdd, onClose, sample }: { onAdd: (condition: FieldCondition) => void; onClose: () => void; sample: BodyFieldSample }) {
  const [scope, setScope] = useState<Scope>('header')
  const [name, setName] = useState('')
  const [op, setOp] = useState<FieldCondition['op']>('eq')
  const [value, setValue] = useState('')
  const [error, setError] = useState<string | null>(null)
  const ops = opsFor(scope, name)
  const needsValue = op !== 'exists' && op !== 'missing'
  const pointers = useBodyFields(
    Object.fromEntries(Object.entries(sample).filter((entry): entry is [string, string] => entry[1] !== undefined)),
    { enabled: scope === 'body' },
  )
  const pointerList = useId()

  const changeScope = (next: Scope) => {
    setScope(next)
    const firstName = next === 'property' ? FILTER_PROPERTIES[1] : next === 'death' ? 'count' : ''
    setName(firstName)
    setOp(opsFor(next, firstName)[0].value)
    setError(null)
  }
  const submit = (e: FormEvent) => {
    e.preventDefault()
    // A pointer is taken as typed: a member name may end in a space.
    const field = scope === 'body' ? name : name.trim()
    const parsed = fieldConditionSchema.safeParse({ on: scope, name: field, op, ...(needsValue ? { value: value.trim() } : {}) })
    if (!parsed.success) {
      const problem = scope === 'body' && field ? pointerProblem(field) : null
      setError(problem ? `Not a JSON Pointer: ${problem}` : !name.trim() ? (scope === 'body' ? 'Enter a JSON Pointer' : 'Name the header') : needsValue && !value.trim() ? 'Enter a value' : op === 'gte' || op === 'lte' ? 'The count is a whole number' : 'Not a valid filter')
      return
    }
    onAdd(parsed.data)
  }

  return (
    <form
      onSubmit={submit}
      onKeyDown={(e) => e.key === 'Escape' && onClose()}
      className="flex flex-wrap items-center gap-1.5 rounded-md border border-zinc-200 bg-zinc-50 px-2 py-1.5"
      aria-label="Add a header, property, body field or x-death filter"
    >
      <Select aria-label="Filter on" value={scope} options={SCOPES} onChange={(e) => changeScope(e.target.value as Scope)} />
      {scope === 'body' ? (
        <>
          <Input
            aria-label="JSON Pointer"
            placeholder="/order/customer"
            title="An RFC 6901 pointer into JSON bodies: /order/customer, /lines/0/sku; ~1 for a / inside a name, ~0 for ~"
            className="w-52 font-mono"
            value={name}
            maxLength={512}
            autoFocus
            list={pointerList}
            invalid={error !== null && error.startsWith('Not a JSON Pointer')}
            onChange={(e) => {
              setName(e.target.value)
              setError(null)
            }}
          />
          <datalist id={pointerList}>
            {(pointers.data?.fields ?? []).map((field) => (
              <option key={field.pointer} value={field.pointer}>{`${field.kind}, in ${field.seen} of ${pointers.data?.sampled ?? 0} recent bodies`}</option>
            ))}
          </datalist>
        </>
      ) : scope === 'header' ? (
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

/**
 * Filters on any header, AMQP property, JSON body field or x-death field, kept in the URL as `h.tenant=acme`,
 * `b./order/customer=42` and the like. `sample` says whose recent bodies the body field form offers pointers from.
 */
export function FieldFilters({ fields, update, sample = {} }: { fields: Record<string, string>; update: Update; sample?: BodyFieldSample }) {
  const [adding, setAdding] = useState(false)
  const bodyFilter = Object.keys(fields).some((key) => key.startsWith('b.'))
  return (
    <>
      <FieldChips fields={fields} update={update} />
      {bodyFilter && (
        <span className="text-xs text-zinc-500" title="Bodies that are not JSON, or larger than 4 MiB, never match a body field filter (not even “does not exist”)">
          Body fields match JSON bodies only
        </span>
      )}
      {adding ? (
        <AddFieldFilter
          sample={sample}
          onClose={() => setAdding(false)}
          onAdd={(condition) => {
            const [key, value] = fieldFilterParam(condition)
            update({ [key]: value })
            setAdding(false)
          }}
        />
      ) : (
        <Button variant="ghost" onClick={() => setAdding(true)} title="Filter on a header, an AMQP property, a JSON body field or x-death">
          + Field filter
        </Button>
      )}
    </>
  )
}
