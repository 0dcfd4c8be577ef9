'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { ConfirmDialog } from '@/components/ui/dialog'
import { Field, Input, Select } from '@/components/ui/fields'
import { RelativeTime } from '@/components/ui/time'
import { ApiError, errorMessage } from '@/lib/client/api'
import { visibleText } from '@/lib/client/format'
import { useCreateWebhook, useDeleteWebhook } from '@/lib/client/use-alerts'
import { PAGERDUTY_EVENTS_URL, WEBHOOK_FORMATS, type AlertWebhookDto, type WebhookFormat } from '@/lib/shared/schemas/alert'

const COLUMNS: DataColumn[] = [{ header: 'URL' }, { header: 'Format', width: 'w-24' }, { header: 'Added', width: 'w-24' }, { width: 'w-24' }]

const FORMAT_LABELS: Record<WebhookFormat, string> = { generic: 'Generic', slack: 'Slack', teams: 'Teams', pagerduty: 'PagerDuty' }
const FORMAT_OPTIONS = WEBHOOK_FORMATS.map((value) => ({ value, label: FORMAT_LABELS[value] }))
const URL_PLACEHOLDERS: Record<WebhookFormat, string> = {
  generic: 'https://hooks.example.com/lazarus',
  slack: 'https://hooks.slack.com/services/…',
  teams: 'https://…/workflows/…/triggers/manual/paths/invoke?…',
  pagerduty: PAGERDUTY_EVENTS_URL,
}

function DeleteWebhookDialog({ webhook, onClose }: { webhook: AlertWebhookDto; onClose: () => void }) {
  const remove = useDeleteWebhook()
  return (
    <ConfirmDialog
      title="Remove this webhook?"
      description={visibleText(webhook.url)}
      onClose={onClose}
      onConfirm={() => remove.mutate(webhook.id, { onSuccess: onClose })}
      pending={remove.isPending}
      error={remove.error}
      keepLabel="Keep it"
      confirmLabel="Remove webhook"
      pendingLabel="Removing…"
    >
      <p className="text-zinc-700">Alerts are no longer posted to it. What was delivered before stays in the history.</p>
    </ConfirmDialog>
  )
}

function AddWebhookForm() {
  const create = useCreateWebhook()
  const [format, setFormat] = useState<WebhookFormat>('generic')
  const [url, setUrl] = useState('')
  const [routingKey, setRoutingKey] = useState('')
  const fields = create.error instanceof ApiError ? create.error.fieldErrors() : {}
  const keyError = fields.routingKey
  const error = fields.url ?? (create.error && !keyError ? errorMessage(create.error) : undefined)
  const pagerDuty = format === 'pagerduty'
  const ready = pagerDuty ? Boolean(routingKey.trim()) : Boolean(url.trim())
  return (
    <form
      aria-label="Add a webhook"
      className="flex flex-wrap items-start gap-2"
      noValidate
      onSubmit={(e) => {
        e.preventDefault()
        const input = pagerDuty ? { format, routingKey: routingKey.trim(), ...(url.trim() ? { url: url.trim() } : {}) } : { format, url: url.trim() }
        create.mutate(input, {
          onSuccess: () => {
            setUrl('')
            setRoutingKey('')
          },
        })
      }}
    >
      <Field label="Format" className="w-36 shrink-0">
        <Select value={format} onChange={(e) => setFormat(e.target.value as WebhookFormat)} options={FORMAT_OPTIONS} className="w-full max-w-none" />
      </Field>
      <Field label={pagerDuty ? 'Events API URL (optional)' : 'Webhook URL'} error={error} className="min-w-48 flex-1">
        <Input type="url" value={url} onChange={(e) => setUrl(e.target.value)} placeholder={URL_PLACEHOLDERS[format]} maxLength={2048} invalid={Boolean(error)} autoComplete="off" spellCheck={false} />
      </Field>
      {pagerDuty && (
        <Field label="Routing key" error={keyError} className="min-w-48 flex-1">
          <Input type="password" value={routingKey} onChange={(e) => setRoutingKey(e.target.value)} placeholder="Integration key of an Events API v2 integration" maxLength={64} invalid={Boolean(keyError)} autoComplete="off" spellCheck={false} />
        </Field>
      )}
      <Button type="submit" variant="primary" className="mt-[19px]" disabled={create.isPending || !ready}>
        {create.isPending ? 'Adding…' : 'Add webhook'}
      </Button>
    </form>
  )
}

/** Where alerts are posted: every enabled webhook receives every notification. */
export function AlertWebhooks({ webhooks, loading }: { webhooks: AlertWebhookDto[] | undefined; loading: boolean }) {
  const [deleting, setDeleting] = useState<AlertWebhookDto | null>(null)
  const rows = webhooks ?? []
  return (
    <>
      <DataTable label="Webhooks" columns={COLUMNS} pending={loading && rows.length === 0} skeletonRows={1}>
        {rows.map((w) => {
          const url = visibleText(w.url)
          return (
            <tr key={w.id} data-webhook-id={w.id}>
              <td className="text-xs" title={url}>
                <span className="flex min-w-0 items-center gap-2">
                  <span className="min-w-0 truncate font-mono">{url}</span>
                  {w.routingKeyHint && (
                    <span className="shrink-0 font-mono text-zinc-500" title="Routing key: only its last four characters are ever shown" data-testid="routing-key-hint">
                      key {w.routingKeyHint}
                    </span>
                  )}
                </span>
              </td>
              <td className="truncate text-xs text-zinc-700" data-testid="webhook-format">
                {FORMAT_LABELS[w.format]}
              </td>
              <td className="truncate text-xs text-zinc-600">
                <RelativeTime iso={w.createdAt} />
              </td>
              <td className="text-right">
                <Button variant="ghost" onClick={() => setDeleting(w)} aria-label={`Remove webhook ${url}`} aria-haspopup="dialog">
                  Remove
                </Button>
              </td>
            </tr>
          )
        })}
      </DataTable>
      {!loading && rows.length === 0 && (
        <p className="px-3 py-3 text-zinc-500" data-testid="no-webhooks">
          No webhooks: alerts show here and in the header, and are sent nowhere.
        </p>
      )}
      <div className="border-t border-zinc-100 p-3">
        <AddWebhookForm />
        <p className="mt-2 text-xs text-zinc-500">
          Generic webhooks get JSON <code className="font-mono">{'{"text", "alert", "alerts"}'}</code>; Slack a Block Kit message; Teams an Adaptive Card; PagerDuty an
          Events API v2 event that triggers, then resolves once the rule is quiet. One post per rule and round, capped per webhook and minute.
        </p>
      </div>
      {deleting && <DeleteWebhookDialog webhook={deleting} onClose={() => setDeleting(null)} />}
    </>
  )
}
