'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { Field, Input, Select, type SelectOption } from '@/components/ui/fields'
import { ApiError, errorMessage } from '@/lib/client/api'
import { visibleText } from '@/lib/client/format'
import { useCreateAlertRule, type CreateAlertRuleRequest } from '@/lib/client/use-alerts'
import { useGroups } from '@/lib/client/use-groups'
import { useSourceOptions } from '@/lib/client/use-sources'
import { ALERT_KINDS, type AlertRuleDto } from '@/lib/shared/schemas/alert'
import type { FindingSeverity } from '@/lib/shared/schemas/topology'
import { KIND_LABELS } from './alert-format'

type Kind = AlertRuleDto['kind']

const NO_FILTERS: Record<string, string> = {}
const KIND_OPTIONS: SelectOption[] = ALERT_KINDS.map((k) => ({ value: k, label: KIND_LABELS[k] }))
const TITLE_MAX = 80
const SEVERITY_OPTIONS: SelectOption[] = [
  { value: 'error', label: 'Errors only' },
  { value: 'warning', label: 'Warnings and errors' },
  { value: 'info', label: 'Every finding' },
]

/** A number field's text as the API's number; an unreadable one is sent as it is, and the API says what is wrong. */
const numberOrText = (text: string): number | string | undefined => {
  if (!text.trim()) return undefined
  const n = Number(text)
  return Number.isFinite(n) ? n : text
}

type SubjectSelectProps = { label: string; value: string; onChange: (value: string) => void; invalid: boolean }

function SourceSelect({ label, value, onChange, invalid }: SubjectSelectProps) {
  const { options, isPending } = useSourceOptions()
  return (
    <Select aria-label={label} value={value} onChange={(e) => onChange(e.target.value)} options={options} placeholder={isPending ? 'Loading…' : 'Every source'} invalid={invalid} className="max-w-none" />
  )
}

// Mounted only for group rules: the home page's group list (the 200 seen last), not fetched otherwise.
function GroupSelect({ label, value, onChange, invalid }: SubjectSelectProps) {
  const groups = useGroups(NO_FILTERS)
  const options = (groups.data?.groups ?? []).map((g) => {
    const title = visibleText(g.title)
    return { value: g.id, label: `#${g.id} ${title.length > TITLE_MAX ? `${title.slice(0, TITLE_MAX)}…` : title}` }
  })
  return (
    <Select aria-label={label} value={value} onChange={(e) => onChange(e.target.value)} options={options} placeholder={groups.isPending ? 'Loading…' : 'Every group'} invalid={invalid} className="max-w-none" />
  )
}

/**
 * Adds a rule: a rate per source or per group (or every source or group), or "a new error group appeared".
 * The API's validation messages appear under the field they concern.
 */
export function AddRuleForm() {
  const create = useCreateAlertRule()
  const [kind, setKind] = useState<Kind>('source-rate')
  const [subject, setSubject] = useState('')
  const [threshold, setThreshold] = useState('')
  const [windowMinutes, setWindowMinutes] = useState('5')
  const [cooldownMinutes, setCooldownMinutes] = useState('30')
  const [tried, setTried] = useState(false)

  const rate = kind !== 'new-group' && kind !== 'new-finding' && kind !== 'replay-halted'
  const [minSeverity, setMinSeverity] = useState<FindingSeverity>('warning')
  const subjectKey = kind === 'source-rate' ? 'sourceId' : 'groupId'
  const fields = create.error instanceof ApiError ? create.error.fieldErrors() : {}
  const local = { threshold: tried && rate && !threshold.trim() ? 'a threshold is required' : undefined }
  const known = ['kind', 'sourceId', 'groupId', 'minSeverity', 'thresholdPerMinute', 'windowMinutes', 'cooldownMinutes']
  // "source 12 does not exist" (a 422 without field details) concerns the subject.
  const subjectError = fields[subjectKey] ?? (create.error && create.error instanceof ApiError && create.error.status === 422 ? errorMessage(create.error) : undefined)
  const other = create.error && !subjectError && !Object.keys(fields).some((k) => known.includes(k)) ? errorMessage(create.error) : null

  const submit = () => {
    setTried(true)
    if (rate && !threshold.trim()) return
    const input = (
      kind === 'new-group' || kind === 'replay-halted'
        ? { kind }
        : kind === 'new-finding'
          ? { kind, minSeverity }
        : {
            kind,
            ...(subject ? { [subjectKey]: subject } : {}),
            thresholdPerMinute: numberOrText(threshold),
            windowMinutes: numberOrText(windowMinutes),
            cooldownMinutes: numberOrText(cooldownMinutes),
          }
    ) as CreateAlertRuleRequest
    create.mutate(input, {
      onSuccess: () => {
        setSubject('')
        setThreshold('')
        setTried(false)
      },
    })
  }

  return (
    <form
      aria-label="Add an alert rule"
      className="flex flex-wrap items-start gap-2"
      noValidate
      onSubmit={(e) => {
        e.preventDefault()
        submit()
      }}
    >
      <Field label="Kind" error={fields.kind} className="w-40">
        <Select
          value={kind}
          onChange={(e) => {
            setKind(e.target.value as Kind)
            setSubject('')
            create.reset()
          }}
          options={KIND_OPTIONS}
          className="max-w-none"
        />
      </Field>
      <Field label={kind === 'group-rate' ? 'Group' : kind === 'new-finding' ? 'Severity' : 'Source'} error={subjectError ?? fields.minSeverity} className="w-64">
        {kind === 'new-finding' ? (
          <Select
            aria-label="Least severity"
            value={minSeverity}
            onChange={(e) => setMinSeverity(e.target.value as FindingSeverity)}
            options={SEVERITY_OPTIONS}
            className="max-w-none"
          />
        ) : kind === 'source-rate' ? (
          <SourceSelect label="Source" value={subject} onChange={setSubject} invalid={Boolean(subjectError)} />
        ) : kind === 'group-rate' ? (
          <GroupSelect label="Group" value={subject} onChange={setSubject} invalid={Boolean(subjectError)} />
        ) : (
          <Select aria-label="Source" value="" options={[]} placeholder={kind === 'replay-halted' ? 'Any staged replay' : 'Any new error group'} disabled className="max-w-none" />
        )}
      </Field>
      <Field label="Threshold (per min)" error={local.threshold ?? fields.thresholdPerMinute} className="w-40">
        <Input
          type="number"
          inputMode="decimal"
          min={0}
          step="any"
          value={rate ? threshold : ''}
          onChange={(e) => setThreshold(e.target.value)}
          placeholder={rate ? '10' : '—'}
          disabled={!rate}
          invalid={Boolean(local.threshold ?? fields.thresholdPerMinute)}
        />
      </Field>
      <Field label="Window (min)" error={fields.windowMinutes} className="w-40">
        <Input
          type="number"
          inputMode="numeric"
          min={1}
          step={1}
          value={rate ? windowMinutes : ''}
          onChange={(e) => setWindowMinutes(e.target.value)}
          placeholder={rate ? '5' : '—'}
          disabled={!rate}
          invalid={Boolean(fields.windowMinutes)}
        />
      </Field>
      <Field label="Cool-down (min)" error={fields.cooldownMinutes} className="w-40">
        <Input
          type="number"
          inputMode="numeric"
          min={0}
          step={1}
          value={rate ? cooldownMinutes : ''}
          onChange={(e) => setCooldownMinutes(e.target.value)}
          placeholder={rate ? '30' : '—'}
          disabled={!rate}
          invalid={Boolean(fields.cooldownMinutes)}
        />
      </Field>
      <Button type="submit" variant="primary" className="mt-[19px]" disabled={create.isPending}>
        {create.isPending ? 'Adding…' : 'Add rule'}
      </Button>
      {other && (
        <p role="alert" className="basis-full text-xs text-red-700">
          {other}
        </p>
      )}
    </form>
  )
}
