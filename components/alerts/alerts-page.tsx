'use client'

import { ErrorState } from '@/components/ui/states'
import { plural } from '@/lib/client/format'
import { useAlerts } from '@/lib/client/use-alerts'
import { useHydrated } from '@/lib/client/use-hydrated'
import { useCan } from '@/lib/client/use-session'
import { AddRuleForm } from './add-rule-form'
import { AlertHistory } from './alert-history'
import { AlertRules } from './alert-rules'
import { AlertWebhooks } from './alert-webhooks'
import { FiringNow } from './firing-now'
import { Section } from './section'

/** /alerts: what is firing now, the rules and where alerts go, and the history of breaches and recoveries. */
export function AlertsPage() {
  const isAdmin = useCan('admin')
  // Faster than the header's banner: someone on this page is watching.
  const overview = useAlerts({ refetchIntervalMs: 5_000 })
  // The header's banner asks for the same alerts: its answer may be in the cache before this page hydrates, below the
  // route's loading boundary. Until hydrated, render what the server did (nothing loaded).
  const hydrated = useHydrated()
  const data = hydrated ? overview.data : undefined
  const isPending = !hydrated || overview.isPending
  const updating = overview.isFetching && !isPending ? <span className="text-xs text-zinc-400">updating…</span> : null

  return (
    <div className="space-y-3">
      <div className="flex items-baseline justify-between gap-4">
        <h1 className="text-base font-semibold">Alerts</h1>
        <span className="text-xs text-zinc-500 tabular-nums" data-testid="alerts-summary">
          {data ? `${data.firing.length} firing · ${plural(data.rules.length, 'rule')} · ${plural(data.webhooks.length, 'webhook')}` : '\u00a0'}
        </span>
      </div>

      {hydrated && overview.error && !data ? (
        <ErrorState title="Could not load the alerts" error={overview.error} onRetry={() => void overview.refetch()} />
      ) : (
        <>
          <Section title="Firing now" actions={updating}>
            <FiringNow firing={data?.firing} loading={isPending} />
          </Section>
          <div className="grid gap-3 xl:grid-cols-[minmax(0,1fr)_30rem]">
            <Section title="Rules" className="self-start">
              {/* Rules and webhooks are an admin's; everyone else sees them read-only. */}
              <fieldset disabled={!isAdmin} className="contents">
                <AlertRules rules={data?.rules} loading={isPending} />
              </fieldset>
              <div className="border-t border-zinc-100 p-3">
                {isAdmin && <AddRuleForm />}
                <p className="mt-2 text-xs text-zinc-500">
                  Rates are dead letters per minute by failure time, averaged over the window. A breach is sent once; a new breach within the cool-down of the last notice is
                  recorded but not sent; recoveries are recorded, not sent. A rule quiet for its window after a sent breach resolves, and that is sent (PagerDuty
                  pages close themselves). Muted groups never alert.
                </p>
              </div>
            </Section>
            <Section title="Webhooks" className="self-start">
              <fieldset disabled={!isAdmin} className="contents">
                <AlertWebhooks webhooks={data?.webhooks} loading={isPending} />
              </fieldset>
            </Section>
          </div>
        </>
      )}

      <Section title="History">
        <AlertHistory />
      </Section>
    </div>
  )
}
