'use client'

import Link from 'next/link'
import { useMemo, useRef, useState } from 'react'
import { Button } from '@/components/ui/button'
import { ConfirmDialog } from '@/components/ui/dialog'
import { Field, Input } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { InlineError } from '@/components/ui/states'
import { Tabs } from '@/components/ui/tabs'
import { plural, visibleText } from '@/lib/client/format'
import { useCan } from '@/lib/client/use-session'
import { useApplyTopology, useBuilderPlan } from '@/lib/client/use-topology'
import { MAX_RETRY_TIERS, buildThreeTier, threeTierSpecSchema, type ThreeTierBuild, type ThreeTierSpecInput } from '@/lib/shared/topology/three-tier'
import { BuilderPlan } from './builder-plan'
import { CopyButton, DownloadButton } from './copy-button'
import { parseDelay } from './delay'

type Form = { vhost: string; name: string; routingKeys: string; delays: string[]; dlqMaxLength: string }

const INITIAL: Form = { vhost: '/', name: 'orders', routingKeys: 'orders.created\norders.updated', delays: ['30s', '5m', '1h'], dlqMaxLength: '1000000' }

type Preview = { spec: ThreeTierSpecInput; build: ThreeTierBuild | null; errors: Record<string, string> }

function preview(form: Form): Preview {
  const errors: Record<string, string> = {}
  const delays = form.delays.map(parseDelay)
  delays.forEach((d, i) => {
    if (d === null) errors[`retryDelaysMs.${i}`] = 'a delay such as 30s, 5m or 1h'
  })
  const spec: ThreeTierSpecInput = {
    name: form.name,
    routingKeys: form.routingKeys
      .split('\n')
      .map((k) => k.trim())
      .filter(Boolean),
    retryDelaysMs: delays.map((d) => d ?? 0),
    dlqMaxLength: Number(form.dlqMaxLength),
  }
  if (!form.vhost.trim()) errors.vhost = 'name the vhost'
  const parsed = threeTierSpecSchema.safeParse(spec)
  if (!parsed.success) for (const issue of parsed.error.issues) errors[issue.path.join('.') || 'spec'] ??= issue.message
  if (Object.keys(errors).length > 0) return { spec, build: null, errors }
  return { spec, build: buildThreeTier(spec, { vhost: form.vhost }), errors }
}

function firstError(errors: Record<string, string>, prefix: string): string | undefined {
  if (errors[prefix]) return errors[prefix]
  const key = Object.keys(errors).find((k) => k.startsWith(`${prefix}.`))
  return key ? errors[key] : undefined
}

type Output = 'definitions' | 'commands' | 'rule'

function BuildOutput({ build }: { build: ThreeTierBuild }) {
  const [tab, setTab] = useState<Output>('definitions')
  const definitions = useMemo(() => JSON.stringify(build.definitions, null, 2), [build])
  const commands = useMemo(() => build.commands.join('\n'), [build])
  const text = tab === 'definitions' ? definitions : tab === 'commands' ? commands : `${build.consumerRule.text}\n\n${build.consumerRule.pseudoCode}`
  return (
    <Panel
      title={
        <Tabs
          label="Output"
          value={tab}
          onChange={setTab}
          tabs={[
            { value: 'definitions', label: 'Definitions JSON' },
            { value: 'commands', label: 'rabbitmqadmin' },
            { value: 'rule', label: 'Consumer rule' },
          ]}
        />
      }
      actions={
        <>
          <CopyButton text={text} label="Copy" />
          <DownloadButton text={definitions} filename={`${build.names.exchange}.definitions.json`} label="Download definitions.json" />
        </>
      }
      bodyClassName="p-0"
    >
      {tab === 'rule' ? (
        <div className="space-y-2 p-3 text-[12px]" data-testid="consumer-rule">
          <p className="whitespace-pre-wrap text-zinc-800">{build.consumerRule.text}</p>
          <pre className="overflow-x-auto rounded bg-zinc-50 p-2 font-mono text-[11px] text-zinc-800">{build.consumerRule.pseudoCode}</pre>
        </div>
      ) : (
        <pre className="max-h-[min(45vh,520px)] overflow-auto p-3 font-mono text-[11px] leading-[1.45] whitespace-pre text-zinc-800" data-testid={`output-${tab}`}>
          {text}
        </pre>
      )}
    </Panel>
  )
}

export function BuilderPage() {
  const isAdmin = useCan('admin')
  const [form, setForm] = useState<Form>(INITIAL)
  const [confirming, setConfirming] = useState(false)
  const planRef = useRef<HTMLDivElement>(null)
  const current = useMemo(() => preview(form), [form])
  const key = JSON.stringify({ vhost: form.vhost, spec: current.spec })
  const plan = useBuilderPlan()
  const apply = useApplyTopology()
  const planned = plan.data && plan.variables && JSON.stringify(plan.variables) === key ? plan.data : null
  const stale = plan.data !== undefined && !planned
  const canApply = isAdmin && planned !== null && planned.plan.canApply && planned.plan.counts.create > 0
  const set = (changes: Partial<Form>) => setForm((f) => ({ ...f, ...changes }))
  const input = () => ({ vhost: form.vhost, spec: current.spec })

  return (
    <div className="space-y-3">
      <div className="flex flex-wrap items-baseline gap-x-4 gap-y-1">
        <h1 className="text-base font-semibold">Three-tier builder</h1>
        <p className="text-xs text-zinc-500">A work queue, its retry tiers and a bounded DLQ that the doctor finds clean. Nothing changes on the broker until an admin applies it.</p>
        <Link href="/topology" className="ml-auto text-xs text-brand hover:underline">
          ← Topology
        </Link>
      </div>
      <div className="grid gap-3 lg:grid-cols-[320px_minmax(0,1fr)] xl:grid-cols-[360px_minmax(0,1fr)]">
        <Panel title="Spec" className="self-start lg:sticky lg:top-12">
          <form
            className="space-y-3"
            aria-label="Spec"
            onSubmit={(event) => {
              event.preventDefault()
              if (current.build) plan.mutate(input(), { onSuccess: () => requestAnimationFrame(() => planRef.current?.scrollIntoView({ block: 'nearest' })) })
            }}
          >
            <Field label="vhost" error={current.errors.vhost}>
              <Input value={form.vhost} onChange={(e) => set({ vhost: e.target.value })} invalid={!!current.errors.vhost} />
            </Field>
            <Field label="Base name" error={current.errors.name} hint={`${form.name || 'name'}.work, ${form.name || 'name'}.retry.*, ${form.name || 'name'}.dlq, …`}>
              <Input value={form.name} onChange={(e) => set({ name: e.target.value })} invalid={!!current.errors.name} className="font-mono" />
            </Field>
            <Field label="Routing keys (one a line; topic patterns allowed)" error={firstError(current.errors, 'routingKeys')}>
              <textarea
                value={form.routingKeys}
                rows={3}
                onChange={(e) => set({ routingKeys: e.target.value })}
                className="rounded-md border border-zinc-300 bg-white px-2 py-1 font-mono text-[12px] text-zinc-900 focus:border-brand focus:ring-2 focus:ring-brand/20 focus:outline-none"
              />
            </Field>
            <fieldset className="space-y-1">
              <legend className="text-xs font-medium text-zinc-600">Retry tiers (delay each, shortest first)</legend>
              {form.delays.map((delay, i) => (
                <div key={i} className="flex items-center gap-1.5">
                  <span className="w-12 text-xs text-zinc-500">tier {i + 1}</span>
                  <Input
                    aria-label={`Tier ${i + 1} delay`}
                    value={delay}
                    onChange={(e) => set({ delays: form.delays.map((d, j) => (j === i ? e.target.value : d)) })}
                    invalid={!!current.errors[`retryDelaysMs.${i}`]}
                    className="w-24 font-mono"
                  />
                  <Button variant="ghost" aria-label={`Remove tier ${i + 1}`} disabled={form.delays.length <= 1} onClick={() => set({ delays: form.delays.filter((_, j) => j !== i) })}>
                    Remove
                  </Button>
                </div>
              ))}
              {firstError(current.errors, 'retryDelaysMs') && (
                <p role="alert" className="text-xs text-red-700">
                  {firstError(current.errors, 'retryDelaysMs')}
                </p>
              )}
              <Button disabled={form.delays.length >= MAX_RETRY_TIERS} onClick={() => set({ delays: [...form.delays, ''] })}>
                Add tier
              </Button>
              <p className="text-xs text-zinc-500">then the terminal DLQ</p>
            </fieldset>
            <Field label="DLQ max length (messages)" error={current.errors.dlqMaxLength}>
              <Input inputMode="numeric" value={form.dlqMaxLength} onChange={(e) => set({ dlqMaxLength: e.target.value })} invalid={!!current.errors.dlqMaxLength} className="w-36 font-mono" />
            </Field>
            {current.errors.spec && <p className="text-xs text-red-700">{current.errors.spec}</p>}
            <div className="flex flex-wrap items-center gap-2 border-t border-zinc-100 pt-3">
              <Button type="submit" disabled={!current.build || plan.isPending}>
                {plan.isPending ? 'Checking the broker…' : 'Dry run'}
              </Button>
              {isAdmin && (
                <Button
                  variant="primary"
                  disabled={!canApply || apply.isPending}
                  onClick={() => setConfirming(true)}
                  title={canApply ? undefined : planned?.plan.counts.conflict ? 'The dry run found conflicts' : planned ? 'Nothing to create' : 'Run a dry run of this spec first'}
                >
                  Apply…
                </Button>
              )}
            </div>
            {plan.error ? (
              <p className="text-xs">
                <InlineError error={plan.error} />
              </p>
            ) : null}
          </form>
        </Panel>

        <div className="min-w-0 space-y-3">
          {apply.data && (
            <div role="status" className="rounded-md border border-emerald-200 bg-emerald-50 px-3 py-2 text-[12px] text-emerald-900" data-testid="apply-result">
              Applied to <span className="font-mono">{visibleText(apply.data.vhost)}</span>: created {plural(apply.data.created.length, 'object')}, {apply.data.unchanged} already there (audit #{apply.data.auditId}).{' '}
              <Link className="underline" href={`/topology?vhost=${encodeURIComponent(apply.data.vhost)}`}>
                See it on the graph
              </Link>
            </div>
          )}
          {current.build ? (
            <BuildOutput build={current.build} />
          ) : (
            <Panel title="Output">
              <p className="text-zinc-500">Fix the spec to see its definitions and commands.</p>
            </Panel>
          )}
          {planned || stale ? (
            <div ref={planRef} className="scroll-mt-12">
              <Panel title={stale ? 'Dry run (of an earlier spec: run it again)' : 'Dry run'} className={stale ? 'opacity-60' : undefined}>
                <BuilderPlan plan={(planned ?? plan.data)!.plan} />
              </Panel>
            </div>
          ) : null}
        </div>
      </div>

      {confirming && planned && (
        <ConfirmDialog
          title={`Apply ${visibleText(form.name)} to ${visibleText(form.vhost)}?`}
          description="Declares on the broker; audited"
          onClose={() => setConfirming(false)}
          onConfirm={() => apply.mutate(input(), { onSuccess: () => setConfirming(false) })}
          pending={apply.isPending}
          error={apply.error}
          keepLabel="Cancel"
          confirmLabel="Apply"
          pendingLabel="Applying…"
          tone="primary"
        >
          <p className="text-zinc-700">
            {plural(planned.plan.counts.create, 'object')} will be declared in <span className="font-mono">{visibleText(planned.plan.vhost)}</span>; {planned.plan.counts.unchanged}{' '}
            already there stay as they are. Nothing existing is changed or deleted.
          </p>
        </ConfirmDialog>
      )}
    </div>
  )
}
