'use client'

import { Checkbox, Field, Input } from '@/components/ui/fields'
import { formatCount, plural } from '@/lib/client/format'
import { MAX_WINDOW_SECONDS, stagingInputSchema, type StagingInput } from '@/lib/shared/replay-stages'
import type { ReplayPlanDto, ReplayStagingPlanDto } from '@/lib/shared/schemas/replay'
import { formatDuration } from './replay-format'

/** The staging fields as typed; empty means the default shown as placeholder. */
export type StagingDraft = { canary: string; window: string; ramps: string; haltPercent: string; haltMin: string }
export const EMPTY_STAGING_DRAFT: StagingDraft = { canary: '', window: '', ramps: '', haltPercent: '', haltMin: '' }

const num = (text: string) => (/^\s*\d+(\.\d+)?\s*$/.test(text) ? Number(text) : Number.NaN)

/** The request's `staging` from the draft, or the fields that are wrong. */
export function parseStagingDraft(draft: StagingDraft): { input: StagingInput; errors: Partial<Record<keyof StagingDraft, string>> } {
  const input: StagingInput = {}
  const errors: Partial<Record<keyof StagingDraft, string>> = {}
  const canary = draft.canary.trim()
  if (canary) {
    const percent = canary.endsWith('%')
    const n = num(percent ? canary.slice(0, -1) : canary)
    if (percent && n > 0 && n <= 100) input.canaryPercent = n
    else if (!percent && Number.isInteger(n) && n >= 1) input.canaryCount = n
    else errors.canary = 'a count (10) or a share (1%)'
  }
  if (draft.window.trim()) {
    const n = num(draft.window)
    if (Number.isInteger(n) && n >= 0 && n <= MAX_WINDOW_SECONDS) input.windowSeconds = n
    else errors.window = `whole seconds, 0 to ${formatCount(MAX_WINDOW_SECONDS)}`
  }
  if (draft.ramps.trim()) input.rampPercents = draft.ramps.split(/[,\s→>]+/).filter(Boolean).map(num)
  if (draft.haltPercent.trim()) input.haltPercent = num(draft.haltPercent.replace('%', ''))
  if (draft.haltMin.trim()) input.haltMinMessages = num(draft.haltMin)
  const checked = stagingInputSchema.safeParse(input)
  if (!checked.success) {
    for (const issue of checked.error.issues) {
      const key = issue.path[0] === 'rampPercents' ? 'ramps' : issue.path[0] === 'haltPercent' ? 'haltPercent' : issue.path[0] === 'haltMinMessages' ? 'haltMin' : issue.path[0] === 'windowSeconds' ? 'window' : 'canary'
      errors[key] ??= issue.path[0] === 'rampPercents' ? 'ascending percentages ending at 100' : issue.message
    }
  }
  return { input, errors }
}

/** Where the default window comes from (the retry tiers, else 2 minutes), short enough for one line under its field. */
const windowHint = (defaults: ReplayStagingPlanDto) => (defaults.windowFrom === 'topology' ? `tiers ${formatDuration(defaults.retryTtlSeconds)} + 2 min` : 'no tiers known: 2 min')

/** The plan dialog's "Stages" section: canary, window, ramps and halt threshold, offered on from the admin's size. */
export function PlanStaging({ plan, staged, onStaged, draft, onDraft, errors }: {
  plan: ReplayPlanDto
  staged: boolean
  onStaged: (staged: boolean) => void
  draft: StagingDraft
  onDraft: (draft: StagingDraft) => void
  errors: Partial<Record<keyof StagingDraft, string>>
}) {
  const defaults = plan.stagingDefaults
  if (!defaults) return null
  const shown = plan.staging ?? defaults
  const window = windowHint(defaults)
  const set = (key: keyof StagingDraft) => (e: { target: { value: string } }) => onDraft({ ...draft, [key]: e.target.value })
  return (
    <div data-testid="plan-staging">
      <label className="flex items-center gap-2">
        <Checkbox checked={staged} onChange={(e) => onStaged(e.target.checked)} aria-describedby="staging-hint" />
        <span className="font-medium">Stage this replay: canary, then ramp, with automatic halt</span>
      </label>
      <p id="staging-hint" className="mt-0.5 text-xs text-zinc-500">
        {plan.stagingSuggested ? `Offered for replays of ${formatCount(plan.stagedFromMessages ?? 0)} messages or more (Settings). ` : ''}
        The job halts when a stage&apos;s replayed messages fail again over the threshold, or one fails in a new error group.
      </p>
      {staged && (
        <>
          <div className="mt-2 grid grid-cols-5 gap-2">
            <Field label="Canary" error={errors.canary} hint="messages, or a share: 1%">
              <Input value={draft.canary} onChange={set('canary')} placeholder={defaults.canaryCount === null && defaults.canaryPercent === null ? `${formatCount(defaults.stages[0]?.size ?? 0)}` : ''} aria-label="Canary size" invalid={Boolean(errors.canary)} />
            </Field>
            <Field label="Window (s)" error={errors.window} hint={window}>
              <Input inputMode="numeric" value={draft.window} onChange={set('window')} placeholder={String(defaults.windowSeconds)} aria-label="Observation window in seconds" invalid={Boolean(errors.window)} />
            </Field>
            <Field label="Ramps (%)" error={errors.ramps} hint="of the job, last 100">
              <Input value={draft.ramps} onChange={set('ramps')} placeholder={defaults.rampPercents.join(', ')} aria-label="Ramp percentages" invalid={Boolean(errors.ramps)} />
            </Field>
            <Field label="Halt at (%)" error={errors.haltPercent} hint="of a stage failing again">
              <Input inputMode="decimal" value={draft.haltPercent} onChange={set('haltPercent')} placeholder={String(defaults.haltPercent)} aria-label="Halt threshold percent" invalid={Boolean(errors.haltPercent)} />
            </Field>
            <Field label="…and at least" error={errors.haltMin} hint="messages failing again">
              <Input inputMode="numeric" value={draft.haltMin} onChange={set('haltMin')} placeholder={String(defaults.haltMinMessages)} aria-label="Halt minimum messages" invalid={Boolean(errors.haltMin)} />
            </Field>
          </div>
          <ol className="mt-2 flex flex-wrap gap-x-4 gap-y-1 text-xs text-zinc-600" aria-label="Planned stages">
            {shown.stages.map((s, i) => (
              <li key={i} data-testid="planned-stage">
                <span className="font-medium text-zinc-800">{i === 0 ? 'Canary' : `Stage ${i + 1}`}</span> {plural(s.size, 'message')}
                {i < shown.stages.length - 1 && <span className="text-zinc-400"> · then {formatDuration(shown.windowSeconds)} window</span>}
              </li>
            ))}
          </ol>
        </>
      )}
    </div>
  )
}
