'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import type { SelectionInput } from '@/lib/client/use-replays'
import { useCan } from '@/lib/client/use-session'
import { ReplayPlanDialog } from './replay-plan-dialog'
import { ResolveDialog } from './resolve-dialog'

type ReplayActionsProps = {
  selection: SelectionInput
  /** The dialogs' subtitle: "group #4", "3 selected messages". */
  subject: string
  replayLabel: string
  resolveLabel: string
  /** After a resolve, when its result is dismissed (a list clears its selection). */
  onResolved?: () => void
  variant?: 'default' | 'ghost'
  disabled?: boolean
  /** Offers "Restore…" (resolved messages back to dead) with this label, e.g. on a resolved message. */
  restoreLabel?: string
}

/** "Replay…" and "Resolve…" for a message, a selection or a group, each opening its dialog. */
export function ReplayActions({ selection, subject, replayLabel, resolveLabel, onResolved, variant = 'default', disabled, restoreLabel }: ReplayActionsProps) {
  const [open, setOpen] = useState<'replay' | 'resolve' | 'restore' | null>(null)
  // Viewers get neither button (the API would refuse them anyway).
  const canReplay = useCan('messages:replay')
  const canResolve = useCan('messages:resolve')
  return (
    <>
      {canReplay && (
        <Button variant={variant === 'ghost' ? 'ghost' : 'primary'} disabled={disabled} onClick={() => setOpen('replay')} aria-haspopup="dialog">
          {replayLabel}
        </Button>
      )}
      {canResolve && (
        <Button variant={variant === 'ghost' ? 'ghost' : 'default'} disabled={disabled} onClick={() => setOpen('resolve')} aria-haspopup="dialog">
          {resolveLabel}
        </Button>
      )}
      {canResolve && restoreLabel && (
        <Button variant={variant === 'ghost' ? 'ghost' : 'default'} onClick={() => setOpen('restore')} aria-haspopup="dialog">
          {restoreLabel}
        </Button>
      )}
      {open === 'restore' && <ResolveDialog mode="restore" selection={selection} subject={subject} onClose={() => setOpen(null)} />}
      {open === 'replay' && <ReplayPlanDialog selection={selection} subject={subject} onClose={() => setOpen(null)} />}
      {open === 'resolve' && (
        <ResolveDialog
          selection={selection}
          subject={subject}
          onClose={() => setOpen(null)}
          onDone={() => {
            setOpen(null)
            onResolved?.()
          }}
        />
      )}
    </>
  )
}
