'use client'

import { Panel } from '@/components/ui/panel'
import { Tabs } from '@/components/ui/tabs'
import { formatBytes } from '@/lib/client/format'
import type { HeaderChangeDto } from '@/lib/shared/schemas/revision'
import type { BodyUpload } from './edit-body-panel'
import type { EditBase, PropertyChange } from './message-edit'
import { BodyDiff, FieldChanges } from './revision-diff'

export type CompareTo = 'previous' | 'original'

type EditChangesPanelProps = {
  /** The revision the edit starts from (0: the original), for the compare tabs. */
  baseRevision: number
  compareTo: CompareTo
  onCompareTo: (compareTo: CompareTo) => void
  /** What the edit is compared with: the base revision or the original. */
  against: EditBase
  /** The edited body text, or null when the body is not edited as text. */
  body: string | null
  upload: BodyUpload | null
  /** The header and property changes, or why the header table cannot be sent. */
  fields: { headers: HeaderChangeDto[]; properties: PropertyChange[] } | { error: string }
}

/** The edit against the revision it starts from (or the original): the body side by side, the fields changed. */
export function EditChangesPanel({ baseRevision, compareTo, onCompareTo, against, body, upload, fields }: EditChangesPanelProps) {
  return (
    <Panel
      title="Changes"
      actions={
        baseRevision === 0 ? (
          <span className="text-xs text-zinc-500">against the original</span>
        ) : (
          <Tabs
            label="Compare with"
            value={compareTo}
            onChange={onCompareTo}
            tabs={[
              { value: 'previous', label: `Revision ${baseRevision}` },
              { value: 'original', label: 'Original' },
            ]}
          />
        )
      }
    >
      <div className="space-y-3">
        {body !== null && against.text !== null ? (
          <BodyDiff before={against.text} after={body} />
        ) : upload ? (
          <p className="text-xs text-zinc-700">Body replaced by an upload of {formatBytes(upload.size)} (was {formatBytes(against.size)}).</p>
        ) : (
          <p className="text-xs text-zinc-500">The body is unchanged.</p>
        )}
        {'error' in fields ? <p className="text-xs text-red-700">{fields.error}</p> : <FieldChanges diff={fields} />}
      </div>
    </Panel>
  )
}
