'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { ConfirmDialog } from '@/components/ui/dialog'
import { plural, visibleText } from '@/lib/client/format'
import { useDeleteSource, useUpdateSource } from '@/lib/client/use-sources'
import type { SourceDto } from '@/lib/shared/schemas/source'

type Asking = 'disable' | 'delete' | null

/**
 * An admin's way to stop a source: disable it (Lazarus stops draining, every stored message stays) or delete it,
 * which the API allows only for a source that stores no dead letters (README, "HTTP API"). Each asks first and says
 * what happens to the messages.
 */
export function SourceActions({ source, onDone }: { source: SourceDto; onDone: () => void }) {
  const [asking, setAsking] = useState<Asking>(null)
  const update = useUpdateSource(source.id)
  const remove = useDeleteSource()
  const queue = visibleText(source.queue)
  const stored = source.drained > 0
  const close = () => {
    update.reset()
    remove.reset()
    setAsking(null)
  }
  const disable = () => update.mutate({ enabled: false }, { onSuccess: () => (close(), onDone()) })

  return (
    <div className="flex flex-wrap items-center gap-2 border-t border-zinc-200 bg-zinc-50/70 px-3 py-2">
      <span className="mr-auto text-xs text-zinc-500">Stop draining this queue:</span>
      {source.enabled && (
        <Button onClick={() => setAsking('disable')} title="Stop draining; stored messages stay">
          Disable…
        </Button>
      )}
      <Button variant="danger" onClick={() => setAsking('delete')} title={stored ? 'A source that stored messages can only be disabled' : 'Remove this source'}>
        Delete…
      </Button>
      {asking === 'disable' && (
        <ConfirmDialog
          title={`Disable ${queue}?`}
          onClose={close}
          onConfirm={disable}
          pending={update.isPending}
          error={update.error}
          keepLabel="Keep draining"
          confirmLabel="Disable"
          pendingLabel="Disabling…"
        >
          <p className="text-zinc-700">
            Lazarus stops draining <span className="font-mono">{queue}</span>: new dead letters wait in the queue until you enable it again.
          </p>
          <p className="mt-2 text-zinc-700">
            {stored ? `The ${plural(source.drained, 'message')} it drained stay: you can still search, replay, resolve and export them.` : 'It has stored no messages.'}
          </p>
        </ConfirmDialog>
      )}
      {asking === 'delete' && stored && (
        <ConfirmDialog
          title={`${queue} cannot be deleted`}
          onClose={close}
          onConfirm={source.enabled ? disable : close}
          pending={update.isPending}
          error={update.error}
          keepLabel={source.enabled ? 'Keep draining' : 'Back'}
          confirmLabel={source.enabled ? 'Disable instead' : 'OK'}
          pendingLabel="Disabling…"
        >
          <p className="text-zinc-700">
            It drained {plural(source.drained, 'message')}, and deleting it would lose them, so Lazarus keeps it.{' '}
            {source.enabled ? 'Disable it instead: draining stops and the messages stay.' : 'It is already disabled: nothing is drained, and its messages stay.'}
          </p>
        </ConfirmDialog>
      )}
      {asking === 'delete' && !stored && (
        <ConfirmDialog
          title={`Delete ${queue}?`}
          onClose={close}
          onConfirm={() => remove.mutate(source.id, { onSuccess: () => (close(), onDone()) })}
          pending={remove.isPending}
          error={remove.error}
          keepLabel="Keep it"
          confirmLabel="Delete source"
          pendingLabel="Deleting…"
        >
          <p className="text-zinc-700">
            Lazarus stops draining <span className="font-mono">{queue}</span> and forgets its settings. It stored no messages, so nothing else is lost; the
            queue itself stays on the broker.
          </p>
        </ConfirmDialog>
      )}
    </div>
  )
}
