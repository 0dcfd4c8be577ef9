'use client'

import { RedactionSettings } from './redaction-settings'
import { RetentionPanel } from './retention-panel'

/** /settings: one section per concern. Redaction applies to every export and every "Copy as ticket". */
export function SettingsPage() {
  return (
    <div className="space-y-4">
      <h1 className="text-base font-semibold">Settings</h1>
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
    </div>
  )
}
