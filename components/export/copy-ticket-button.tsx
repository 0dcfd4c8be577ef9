'use client'

import { useEffect, useRef, useState } from 'react'
import { Button } from '@/components/ui/button'
import { Dialog } from '@/components/ui/dialog'
import { errorMessage } from '@/lib/client/api'

type CopyTicketButtonProps = {
  /** A group's ticket (summary and samples) or one message's. */
  kind: 'group' | 'message'
  id: string
  label?: string
  className?: string
}

type State = { phase: 'idle' | 'loading' | 'copied' } | { phase: 'manual'; text: string } | { phase: 'failed'; error: string }

async function fetchTicket(kind: CopyTicketButtonProps['kind'], id: string): Promise<string> {
  const response = await fetch(`/api/${kind === 'group' ? 'groups' : 'messages'}/${encodeURIComponent(id)}/ticket`, { cache: 'no-store' })
  if (!response.ok) {
    const body = (await response.json().catch(() => null)) as { error?: { message?: string } } | null
    throw new Error(body?.error?.message ?? `${response.status} ${response.statusText}`)
  }
  return response.text()
}

/**
 * "Copy as ticket": the redacted Markdown ticket of GET /api/{groups|messages}/{id}/ticket onto the clipboard. Where
 * the page may not write the clipboard (plain http on another host), the ticket opens in a dialog to copy by hand.
 */
export function CopyTicketButton({ kind, id, label = 'Copy as ticket', className }: Readonly<CopyTicketButtonProps>) {
  const [state, setState] = useState<State>({ phase: 'idle' })
  const reset = useRef<ReturnType<typeof setTimeout>>(undefined)
  useEffect(() => () => clearTimeout(reset.current), [])

  const copy = async () => {
    setState({ phase: 'loading' })
    let text: string
    try {
      text = await fetchTicket(kind, id)
    } catch (error) {
      setState({ phase: 'failed', error: errorMessage(error) })
      return
    }
    try {
      if (!navigator.clipboard?.writeText) throw new Error('no clipboard')
      await navigator.clipboard.writeText(text)
      setState({ phase: 'copied' })
      clearTimeout(reset.current)
      reset.current = setTimeout(() => setState({ phase: 'idle' }), 2_000)
    } catch {
      setState({ phase: 'manual', text })
    }
  }

  return (
    <>
      <Button className={className} onClick={() => void copy()} disabled={state.phase === 'loading'} title="Markdown for a bug ticket; secrets are redacted">
        {state.phase === 'loading' ? 'Copying…' : state.phase === 'copied' ? 'Copied ✓' : label}
      </Button>
      <span role="status" className="sr-only">
        {state.phase === 'copied' ? 'Ticket copied to the clipboard' : ''}
      </span>
      {state.phase === 'failed' && (
        <span role="alert" className="text-xs text-red-700">
          {state.error}
        </span>
      )}
      {state.phase === 'manual' && <ManualCopy text={state.text} onClose={() => setState({ phase: 'idle' })} />}
    </>
  )
}

function ManualCopy({ text, onClose }: { text: string; onClose: () => void }) {
  const area = useRef<HTMLTextAreaElement>(null)
  useEffect(() => area.current?.select(), [])
  return (
    <Dialog title="Copy the ticket" description="This browser does not let the page write the clipboard: press Ctrl+C (⌘C on a Mac)." onClose={onClose} footer={<Button onClick={onClose}>Close</Button>}>
      <textarea ref={area} readOnly value={text} aria-label="Ticket (Markdown)" className="h-[50vh] w-full resize-none rounded-md border border-zinc-300 p-2 font-mono text-xs text-zinc-800" />
    </Dialog>
  )
}
