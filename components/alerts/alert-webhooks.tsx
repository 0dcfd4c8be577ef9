'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { ConfirmDialog } from '@/components/ui/dialog'
import { Field, Input } from '@/components/ui/fields'
import { RelativeTime } from '@/components/ui/time'
import { ApiError, errorMessage } from '@/lib/client/api'
import { visibleText } from '@/lib/client/format'
import { useCreateWebhook, useDeleteWebhook } from '@/lib/client/use-alerts'
import type { AlertWebhookDto } from '@/lib/shared/schemas/alert'

const COLUMNS: DataColumn[] = [{ header: 'URL' }, { header: 'Added', width: 'w-24' }, { width: 'w-24' }]

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
  const [url, setUrl] = useState('')
  const fields = create.error instanceof ApiError ? create.error.fieldErrors() : {}
  const error = fields.url ?? (create.error ? errorMessage(create.error) : undefined)
  return (
    <form
      aria-label="Add a webhook"
      className="flex items-start gap-2"
      noValidate
      onSubmit={(e) => {
        e.preventDefault()
        create.mutate(url.trim(), { onSuccess: () => setUrl('') })
      }}
    >
      <Field label="Webhook URL" error={error} className="min-w-0 flex-1">
        <Input type="url" value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://hooks.slack.com/services/…" maxLength={2048} invalid={Boolean(error)} autoComplete="off" spellCheck={false} />
      </Field>
      <Button type="submit" variant="primary" className="mt-[19px]" disabled={create.isPending || !url.trim()}>
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
              <td className="truncate font-mono text-xs" title={url}>
                {url}
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
          Each alert is POSTed as JSON <code className="font-mono">{'{"text", "alert"}'}</code>; <code className="font-mono">text</code> is what Slack and compatible receivers show.
        </p>
      </div>
      {deleting && <DeleteWebhookDialog webhook={deleting} onClose={() => setDeleting(null)} />}
    </>
  )
}
