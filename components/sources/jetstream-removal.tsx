'use client'

import { useState } from 'react'
import { ConfirmDialog } from '@/components/ui/dialog'
import { Checkbox } from '@/components/ui/fields'
import { InlineError } from '@/components/ui/states'
import { visibleText } from '@/lib/client/format'
import { useUpdateSource } from '@/lib/client/use-sources'
import type { SourceDto } from '@/lib/shared/schemas/source'

/**
 * An admin's switch for deleting a JetStream source's captured messages from their stream once stored
 * (docs/jetstream.md#removing-captured-messages). Off by default; turning it on asks first and says what it does, since
 * the stream's copy is the team's and other consumers or tools may still read it. Turning it off applies at once.
 */
export function JetStreamRemoval({ source }: { source: SourceDto }) {
  const [asking, setAsking] = useState(false)
  const update = useUpdateSource(source.id)
  const stream = visibleText(source.stream ?? '')
  const close = () => {
    update.reset()
    setAsking(false)
  }

  return (
    <div className="flex flex-wrap items-center gap-x-3 gap-y-1 border-t border-zinc-200 bg-zinc-50/70 px-3 py-2 text-[13px]">
      <label className="flex items-center gap-2">
        <Checkbox
          checked={source.removeAfterCapture}
          disabled={update.isPending}
          onChange={(e) => (e.target.checked ? setAsking(true) : update.mutate({ removeAfterCapture: false }))}
        />
        Delete each captured message from the stream once stored
      </label>
      <span className="text-xs text-zinc-500">
        {source.removeAfterCapture ? `on: messages captured from now on are deleted from ${stream}` : `off: failed messages stay in ${stream} until its limits remove them`}
      </span>
      {!asking && update.error !== null && <InlineError error={update.error} />}
      {asking && (
        <ConfirmDialog
          title={`Delete captured messages from ${stream}?`}
          onClose={close}
          onConfirm={() => update.mutate({ removeAfterCapture: true }, { onSuccess: close })}
          pending={update.isPending}
          error={update.error}
          keepLabel="Leave them in the stream"
          confirmLabel="Delete once stored"
          pendingLabel="Saving…"
        >
          <p className="text-zinc-700">
            From now on, each failed message of <span className="font-mono">{visibleText(source.queue)}</span> that Lazarus captures is deleted from the
            stream <span className="font-mono">{stream}</span> once it is stored. Lazarus keeps its data, headers and facts; the stream&rsquo;s own copy
            is gone, for every consumer and tool that reads the stream, and no longer counts against its limits.
          </p>
          <p className="mt-2 text-zinc-700">
            Leave it off while another consumer of the stream may still need the message, or a tool of your team reads failures from the stream.
            Messages captured before stay where they are.
          </p>
        </ConfirmDialog>
      )}
    </div>
  )
}
