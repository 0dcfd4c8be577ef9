'use client'

import { useState } from 'react'
import { Badge } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { ConfirmDialog } from '@/components/ui/dialog'
import { InlineError } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { visibleText } from '@/lib/client/format'
import { useDeleteAlertRule, useSetAlertRuleEnabled } from '@/lib/client/use-alerts'
import type { AlertRuleDto } from '@/lib/shared/schemas/alert'
import { AlertKindBadge, KIND_LABELS, minutesText, RuleSubject, thresholdText } from './alert-format'

const COLUMNS: DataColumn[] = [
  { header: 'Kind', width: 'w-28' },
  { header: 'Subject' },
  { header: 'Threshold', width: 'w-28', align: 'right' },
  { header: 'Window', width: 'w-24', align: 'right' },
  { header: 'Cool-down', width: 'w-28', align: 'right' },
  { header: 'Firing', width: 'w-20', align: 'right' },
  { header: 'Checked', width: 'w-24' },
  { header: 'Enabled', width: 'w-28' },
  { width: 'w-20' },
]

/** The rule in words, for labels and the delete dialog: "source rate of orders.dlq". */
export function ruleName(rule: AlertRuleDto): string {
  if (rule.kind === 'new-group') return 'new error groups'
  if (rule.kind === 'new-finding') return `new topology findings (${rule.minSeverity ?? 'warning'} or worse)`
  if (rule.kind === 'replay-halted') return 'halted replays'
  const subject = rule.kind === 'source-rate' ? (rule.source ? visibleText(rule.source.queue) : 'every source') : rule.group ? visibleText(rule.group.title) : 'every group'
  return `${KIND_LABELS[rule.kind]} of ${subject}`
}

function EnabledSwitch({ rule }: { rule: AlertRuleDto }) {
  const toggle = useSetAlertRuleEnabled()
  return (
    <span className="flex items-center gap-2">
      <button
        type="button"
        role="switch"
        aria-checked={rule.enabled}
        aria-label={`Enabled: ${ruleName(rule)}`}
        onClick={() => toggle.mutate({ id: rule.id, enabled: !rule.enabled })}
        className={cn(
          'relative inline-flex h-4 w-7 shrink-0 items-center rounded-full transition-colors focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-brand',
          rule.enabled ? 'bg-brand' : 'bg-zinc-300',
        )}
      >
        <span aria-hidden className={cn('inline-block size-3 rounded-full bg-white shadow-xs transition-transform', rule.enabled ? 'translate-x-3.5' : 'translate-x-0.5')} />
      </button>
      <span className={cn('text-xs', rule.enabled ? 'text-zinc-700' : 'text-zinc-400')}>{rule.enabled ? 'on' : 'off'}</span>
      {toggle.error && (
        <span className="min-w-0 truncate text-xs">
          <InlineError error={toggle.error} />
        </span>
      )}
    </span>
  )
}

function DeleteRuleDialog({ rule, onClose }: { rule: AlertRuleDto; onClose: () => void }) {
  const remove = useDeleteAlertRule()
  return (
    <ConfirmDialog
      title="Delete this alert rule?"
      description={ruleName(rule)}
      onClose={onClose}
      onConfirm={() => remove.mutate(rule.id, { onSuccess: onClose })}
      pending={remove.isPending}
      error={remove.error}
      keepLabel="Keep it"
      confirmLabel="Delete rule"
      pendingLabel="Deleting…"
    >
      <p className="text-zinc-700">
        It stops being evaluated{rule.firing > 0 ? ', and what it has firing leaves the banner' : ''}. Its past alerts stay in the history.
      </p>
    </ConfirmDialog>
  )
}

/** Every rule with what it watches, its limits and whether it is in breach; a switch to pause it, a button to delete it. */
export function AlertRules({ rules, loading }: { rules: AlertRuleDto[] | undefined; loading: boolean }) {
  const [deleting, setDeleting] = useState<AlertRuleDto | null>(null)
  const rows = rules ?? []
  return (
    <>
      <DataTable label="Alert rules" columns={COLUMNS} pending={loading && rows.length === 0} skeletonRows={2}>
        {rows.map((rule) => (
          <tr key={rule.id} data-rule-id={rule.id} data-kind={rule.kind} className={cn(!rule.enabled && 'text-zinc-400')} title={`added by ${visibleText(rule.createdBy)}`}>
            <td>
              <AlertKindBadge kind={rule.kind} />
            </td>
            <td className="truncate">
              <RuleSubject rule={rule} />
            </td>
            <td className="text-right tabular-nums">{rule.thresholdPerMinute === null ? <span className="text-zinc-400">—</span> : `≥ ${thresholdText(rule.thresholdPerMinute)}`}</td>
            <td className="text-right text-zinc-600 tabular-nums">{rule.thresholdPerMinute === null ? <span className="text-zinc-400">—</span> : minutesText(rule.windowMinutes)}</td>
            <td className="text-right text-zinc-600 tabular-nums">{rule.thresholdPerMinute === null ? <span className="text-zinc-400">—</span> : minutesText(rule.cooldownMinutes)}</td>
            <td className="text-right" data-testid="rule-firing">
              {rule.firing > 0 ? <Badge tone="red">{rule.firing}</Badge> : <span className="text-zinc-400 tabular-nums">0</span>}
            </td>
            <td className="text-zinc-600" data-testid="rule-checked">
              {rule.evaluatedAt && rule.enabled ? <RelativeTime iso={rule.evaluatedAt} /> : <span className="text-zinc-400">—</span>}
            </td>
            <td>
              <EnabledSwitch rule={rule} />
            </td>
            <td className="text-right">
              <Button variant="ghost" onClick={() => setDeleting(rule)} aria-label={`Delete rule: ${ruleName(rule)}`} aria-haspopup="dialog">
                Delete
              </Button>
            </td>
          </tr>
        ))}
      </DataTable>
      {!loading && rows.length === 0 && (
        <p className="px-3 py-3 text-zinc-500" data-testid="no-rules">
          No rules yet. Add one below: a rate per source or per group, or any new error group.
        </p>
      )}
      {deleting && <DeleteRuleDialog rule={deleting} onClose={() => setDeleting(null)} />}
    </>
  )
}
