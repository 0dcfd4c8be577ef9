'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { Checkbox, Field, Input, Select } from '@/components/ui/fields'
import { ApiError, errorMessage } from '@/lib/client/api'
import { useUpdateSource } from '@/lib/client/use-sources'
import { ENTITY_KEY_PROPERTIES, type EntityKeyRule, type EntityVersionRule, type SourceDto, type UpdateSourceInput } from '@/lib/shared/schemas/source'

/** Where a rule reads (an entity key's, or a version's): a property, a header or a JSON pointer. */
type RuleDraft = { kind: '' | EntityKeyRule['kind']; propertyName: string; headerName: string; pointer: string }

type Draft = {
  entity: RuleDraft
  version: RuleDraft
  versionType: EntityVersionRule['type']
  orderSensitive: boolean
  critical: boolean
  targetType: SourceDto['defaultTarget']['type']
  exchange: string
  routingKey: string
  enabled: boolean
}

function ruleDraft(rule: EntityKeyRule | null): RuleDraft {
  return {
    kind: rule?.kind ?? '',
    propertyName: rule?.kind === 'property' ? rule.name : 'correlationId',
    headerName: rule?.kind === 'header' ? rule.name : '',
    pointer: rule?.kind === 'jsonPointer' ? rule.pointer : '',
  }
}

function ruleOf(d: RuleDraft): EntityKeyRule | null {
  if (d.kind === '') return null
  if (d.kind === 'property') return { kind: 'property', name: d.propertyName as (typeof ENTITY_KEY_PROPERTIES)[number] }
  return d.kind === 'header' ? { kind: 'header', name: d.headerName } : { kind: 'jsonPointer', pointer: d.pointer }
}

function draftOf(source: SourceDto): Draft {
  const target = source.defaultTarget
  return {
    entity: ruleDraft(source.entityKey),
    version: ruleDraft(source.entityVersion),
    versionType: source.entityVersion?.type ?? 'number',
    orderSensitive: source.orderSensitive,
    critical: source.critical,
    targetType: target.type,
    exchange: target.type === 'custom' ? target.exchange : '',
    routingKey: target.type === 'custom' ? target.routingKey : '',
    enabled: source.enabled,
  }
}

function toInput(d: Draft): UpdateSourceInput {
  const version = ruleOf(d.version)
  const defaultTarget = d.targetType === 'custom' ? { type: 'custom' as const, exchange: d.exchange, routingKey: d.routingKey } : { type: d.targetType }
  return { entityKey: ruleOf(d.entity), entityVersion: version && { ...version, type: d.versionType }, orderSensitive: d.orderSensitive, critical: d.critical, defaultTarget, enabled: d.enabled }
}

/** The fields of one rule: where it reads from, then the property, header name or pointer. */
function RuleFields({ what, labelPrefix, value, onChange, error, placeholder }: {
  what: string
  /** Before the fields' accessible names ("Version " → "Version JSON pointer"); the entity key's have none. */
  labelPrefix: string
  value: RuleDraft
  onChange: (changes: Partial<RuleDraft>) => void
  error?: string
  placeholder: string
}) {
  return (
    <>
      <Field label="From" className="w-40">
        <Select
          aria-label={`${what} source`}
          value={value.kind}
          onChange={(e) => onChange({ kind: e.target.value as RuleDraft['kind'] })}
          options={[
            { value: '', label: 'None' },
            { value: 'property', label: 'AMQP property' },
            { value: 'header', label: 'Header' },
            { value: 'jsonPointer', label: 'JSON pointer' },
          ]}
        />
      </Field>
      {value.kind === 'property' && (
        <Field label="Property" error={error} className="w-40">
          <Select aria-label={`${labelPrefix}Property name`} value={value.propertyName} onChange={(e) => onChange({ propertyName: e.target.value })} options={ENTITY_KEY_PROPERTIES.map((p) => ({ value: p, label: p }))} invalid={Boolean(error)} />
        </Field>
      )}
      {value.kind === 'header' && (
        <Field label="Header name" error={error} className="min-w-40 flex-1">
          <Input aria-label={`${labelPrefix}Header name`} value={value.headerName} onChange={(e) => onChange({ headerName: e.target.value })} placeholder={`x-${placeholder.replaceAll('/', '-').replace(/^-/, '')}`} invalid={Boolean(error)} />
        </Field>
      )}
      {value.kind === 'jsonPointer' && (
        <Field label="JSON pointer" error={error} hint={`RFC 6901, e.g. ${placeholder}`} className="min-w-40 flex-1">
          <Input aria-label={`${labelPrefix}JSON pointer`} value={value.pointer} onChange={(e) => onChange({ pointer: e.target.value })} placeholder={placeholder} invalid={Boolean(error)} className="font-mono" />
        </Field>
      )}
    </>
  )
}

/** Inline editor of a source's settings; validation comes from the API and is shown by the field. */
export function SourceSettingsForm({ source, onDone }: { source: SourceDto; onDone: () => void }) {
  const [draft, setDraft] = useState(() => draftOf(source))
  const update = useUpdateSource(source.id)
  const fields = update.error instanceof ApiError ? update.error.fieldErrors() : {}
  const known = ['entityKey', 'entityKey.kind', 'entityKey.name', 'entityKey.pointer', 'entityVersion', 'entityVersion.kind', 'entityVersion.name', 'entityVersion.pointer', 'entityVersion.type', 'defaultTarget', 'defaultTarget.exchange', 'defaultTarget.routingKey', 'orderSensitive', 'critical', 'enabled']
  const other = update.error && !Object.keys(fields).some((k) => known.includes(k)) ? errorMessage(update.error) : null
  const set = (changes: Partial<Draft>) => setDraft((d) => ({ ...d, ...changes }))
  const entityError = fields['entityKey.pointer'] ?? fields['entityKey.name'] ?? fields['entityKey.kind'] ?? fields.entityKey
  const versionError = fields['entityVersion.pointer'] ?? fields['entityVersion.name'] ?? fields['entityVersion.kind'] ?? fields.entityVersion
  // Enabling was refused: the queue looks like a work queue (or could not be checked). The admin may insist, explicitly.
  const confirmable = update.error instanceof ApiError && (update.error.details as { confirmWith?: unknown } | undefined)?.confirmWith === 'confirmNotWorkQueue'

  return (
    <form
      aria-label={`Settings of ${source.queue}`}
      className="grid gap-4 bg-zinc-50/70 px-3 py-3 lg:grid-cols-[minmax(0,1.3fr)_minmax(0,1.3fr)_minmax(0,0.8fr)]"
      onSubmit={(e) => {
        e.preventDefault()
        update.mutate(toInput(draft), { onSuccess: onDone })
      }}
    >
      <fieldset className="min-w-0 space-y-2">
        <legend className="mb-1 text-xs font-semibold text-zinc-700">Entity key</legend>
        <div className="flex flex-wrap items-start gap-2">
          <RuleFields what="Entity key" labelPrefix="" value={draft.entity} onChange={(c) => set({ entity: { ...draft.entity, ...c } })} error={entityError} placeholder="/order/id" />
        </div>
        <label className="flex items-center gap-2 text-[13px]">
          <Checkbox checked={draft.orderSensitive} onChange={(e) => set({ orderSensitive: e.target.checked })} />
          Order-sensitive <span className="text-xs text-zinc-500">(replays pause the entity first)</span>
        </label>
        {fields.orderSensitive && <p className="text-xs text-red-700">{fields.orderSensitive}</p>}
        <div className="mt-1 text-xs font-semibold text-zinc-700">Entity version <span className="font-normal text-zinc-500">(old must not overwrite new)</span></div>
        <div className="flex flex-wrap items-start gap-2">
          <RuleFields what="Entity version" labelPrefix="Version " value={draft.version} onChange={(c) => set({ version: { ...draft.version, ...c } })} error={versionError} placeholder="/order/version" />
          {draft.version.kind !== '' && (
            <Field label="Read as" error={fields['entityVersion.type']} className="w-36">
              <Select
                aria-label="Entity version type"
                value={draft.versionType}
                onChange={(e) => set({ versionType: e.target.value as Draft['versionType'] })}
                options={[
                  { value: 'number', label: 'Number' },
                  { value: 'time', label: 'ISO 8601 time' },
                ]}
              />
            </Field>
          )}
        </div>
        <label className="flex items-center gap-2 text-[13px]">
          <Checkbox checked={draft.critical} onChange={(e) => set({ critical: e.target.checked })} />
          {/* The word never breaks: in a narrow column (1024 px) the hint wraps instead. */}
          <span className="shrink-0">Critical</span> <span className="min-w-0 text-xs text-zinc-500">(replays need a second operator&rsquo;s approval when the policy in Settings says so)</span>
        </label>
      </fieldset>

      <fieldset className="min-w-0 space-y-2">
        <legend className="mb-1 text-xs font-semibold text-zinc-700">Default replay target</legend>
        <div className="flex flex-wrap items-start gap-2">
          <Field label="Target" error={fields.defaultTarget} className="w-56 shrink-0">
            <Select
              aria-label="Default replay target"
              value={draft.targetType}
              onChange={(e) => set({ targetType: e.target.value as Draft['targetType'] })}
              options={[
                { value: 'source', label: 'Original exchange' },
                { value: 'queue', label: 'Failed queue only' },
                { value: 'custom', label: 'Custom' },
              ]}
            />
          </Field>
          {draft.targetType === 'custom' && (
            <>
              <Field label="Exchange" error={fields['defaultTarget.exchange']} className="min-w-28 flex-1">
                <Input aria-label="Exchange" value={draft.exchange} onChange={(e) => set({ exchange: e.target.value })} invalid={Boolean(fields['defaultTarget.exchange'])} className="font-mono" />
              </Field>
              <Field label="Routing key" error={fields['defaultTarget.routingKey']} className="min-w-28 flex-1">
                <Input aria-label="Routing key" value={draft.routingKey} onChange={(e) => set({ routingKey: e.target.value })} invalid={Boolean(fields['defaultTarget.routingKey'])} className="font-mono" />
              </Field>
            </>
          )}
        </div>
      </fieldset>

      <div className="flex min-w-0 flex-col justify-between gap-3">
        <label className="flex items-center gap-2 text-[13px]">
          <Checkbox checked={draft.enabled} onChange={(e) => set({ enabled: e.target.checked })} />
          Draining enabled
        </label>
        {other && (
          <p role="alert" className="text-xs break-words text-red-700">
            {other}
          </p>
        )}
        <div className="flex gap-2">
          <Button type="submit" variant="primary" disabled={update.isPending}>
            {update.isPending ? 'Saving…' : 'Save'}
          </Button>
          <Button onClick={onDone}>Cancel</Button>
          {confirmable && (
            <Button variant="danger" disabled={update.isPending} onClick={() => update.mutate({ ...toInput(draft), confirmNotWorkQueue: true }, { onSuccess: onDone })}>
              It is a dead-letter queue: enable anyway
            </Button>
          )}
        </div>
      </div>
    </form>
  )
}
