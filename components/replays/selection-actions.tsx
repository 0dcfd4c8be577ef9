'use client'

import { useState } from 'react'
import { ExportMenu } from '@/components/export/export-menu'
import { BulkEditDialog } from '@/components/messages/bulk-edit-dialog'
import { Button } from '@/components/ui/button'
import { useCan } from '@/lib/client/use-session'
import type { SelectionInfo } from '@/components/messages/message-list'
import { formatCount } from '@/lib/client/format'
import type { BulkSelection } from '@/lib/client/selection-store'
import { toSelectionInput } from '@/lib/client/use-replays'
import { ReplayActions } from './replay-actions'

/** The message list's bulk actions: "Replay N…", "Resolve N…" and "Edit N…" on the selection (ids, or all matching). */
export function SelectionActions({ selection, info }: { selection: BulkSelection; info: SelectionInfo }) {
  const [editing, setEditing] = useState(false)
  const canEdit = useCan('messages:edit')
  const n = info.count === null ? '' : `${info.estimated ? '~' : ''}${formatCount(info.count)}`
  const subject =
    'ids' in selection
      ? selection.ids.length === 1
        ? `message #${selection.ids[0]}`
        : `${formatCount(selection.ids.length)} selected messages`
      : `all ${n ? `${n} ` : ''}messages matching the filter`
  const label = 'ids' in selection ? n : `all ${n}`.trim()
  return (
    <>
      <ReplayActions
        selection={toSelectionInput(selection)}
        subject={subject}
        replayLabel={`Replay ${label}…`}
        resolveLabel={`Resolve ${label}…`}
        onResolved={info.clear}
      />
      {canEdit && (
        <Button onClick={() => setEditing(true)} aria-haspopup="dialog">
          Edit {label}…
        </Button>
      )}
      {editing && <BulkEditDialog selection={toSelectionInput(selection)} subject={subject} onClose={() => setEditing(false)} />}
      <ExportMenu selection={selection} label={`Export ${label}`} count={info.count} estimated={info.estimated} />
    </>
  )
}

export const renderSelectionActions = (selection: BulkSelection, info: SelectionInfo) => <SelectionActions selection={selection} info={info} />
