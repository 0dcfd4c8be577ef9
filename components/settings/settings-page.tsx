'use client'

import Link from 'next/link'
import type { ReplayTargetSettingsDto } from '@/lib/shared/schemas/replay-targets'
import type { WebhookSettingsDto } from '@/lib/shared/schemas/webhook-settings'
import { AllowListEditor } from './allow-list-editor'
import { RedactionSettings } from './redaction-settings'
import { ReplayApprovalSettings } from './replay-approval-settings'
import { ReplayConfirmSettings } from './replay-confirm-settings'
import { RetentionPanel } from './retention-panel'
import { TraceSettings } from './trace-settings'

/** /settings: one section per concern. Redaction applies to every export and every "Copy as ticket". */
export function SettingsPage() {
  return (
    <div className="space-y-4">
      <div className="flex items-baseline justify-between">
        <h1 className="text-base font-semibold">Settings</h1>
        <Link href="/settings/access" className="text-xs text-brand hover:underline">
          People, roles and API tokens →
        </Link>
      </div>
      <section aria-labelledby="redaction-heading" className="space-y-2">
        <div>
          <h2 id="redaction-heading" className="text-sm font-semibold text-zinc-900">
            Redaction
          </h2>
          <p className="text-xs text-zinc-500">
            Applied on the server to every export (JSON Lines, CSV, Markdown) and every &ldquo;Copy as ticket&rdquo;. Stored messages are never changed.
          </p>
        </div>
        <RedactionSettings />
      </section>
      <section aria-labelledby="retention-heading" className="space-y-2">
        <div>
          <h2 id="retention-heading" className="text-sm font-semibold text-zinc-900">
            Store and retention
          </h2>
          <p className="text-xs text-zinc-500">
            Replayed and resolved messages are deleted after the retention period (<code>LAZARUS_RETENTION_DAYS</code>); dead and held ones never are.
          </p>
        </div>
        <RetentionPanel />
      </section>
      <section aria-labelledby="targets-heading" className="space-y-2">
        <h2 id="targets-heading" className="text-sm font-semibold text-zinc-900">
          What Lazarus may be aimed at
        </h2>
        <div className="grid gap-3 xl:grid-cols-2">
          <AllowListEditor<ReplayTargetSettingsDto>
            title="Custom replay targets"
            path="/api/settings/replay-targets"
            field="customTargetPatterns"
            environmentField="environmentPatterns"
            help="Exchanges a custom replay target may name, one pattern per line (* matches anything). Empty: only the original exchange or the failed queue. amq.* and Lazarus' own exchanges are never allowed."
            placeholder={'orders.*\nbilling.retry'}
          />
          <AllowListEditor<WebhookSettingsDto>
            title="Private webhook hosts"
            path="/api/settings/webhooks"
            field="allowedHosts"
            environmentField="environmentAllowedHosts"
            help="Alert webhooks never reach loopback, private or link-local addresses unless listed here: a host name, an IP address or a CIDR range per line."
            placeholder={'chat.internal.example.com\n10.1.2.3'}
          />
          <ReplayConfirmSettings />
          <ReplayApprovalSettings />
        </div>
      </section>
      <section aria-labelledby="traces-heading" className="space-y-2">
        <h2 id="traces-heading" className="text-sm font-semibold text-zinc-900">
          Traces
        </h2>
        <TraceSettings />
      </section>
    </div>
  )
}
