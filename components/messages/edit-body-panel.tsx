'use client'

import { Button } from '@/components/ui/button'
import { Panel } from '@/components/ui/panel'
import { formatBytes, visibleText } from '@/lib/client/format'
import { CodeEditor } from './code-editor'
import { base64Of, type EditBase } from './message-edit'

/** A binary body's replacement, read from a file. */
export type BodyUpload = { name: string; base64: string; size: number }

type EditBodyPanelProps = {
  base: EditBase
  /** The body is text the editor can hold whole; otherwise it is replaced by an upload. */
  textual: boolean
  isJson: boolean
  body: string
  onBody: (body: string) => void
  jsonError: string | null
  upload: BodyUpload | null
  onUpload: (upload: BodyUpload | null) => void
}

/** The body: a code editor for text (Format for JSON, its parse error below), a file upload for anything else. */
export function EditBodyPanel({ base, textual, isJson, body, onBody, jsonError, upload, onUpload }: EditBodyPanelProps) {
  const format = () => {
    try {
      onBody(JSON.stringify(JSON.parse(body), null, 2))
    } catch {
      // The lint gutter and the message below already say why.
    }
  }

  const onFile = async (file: File | undefined) => {
    if (!file) return onUpload(null)
    const bytes = new Uint8Array(await file.arrayBuffer())
    onUpload({ name: file.name, base64: base64Of(bytes), size: bytes.length })
  }

  return (
    <Panel
      title="Body"
      actions={
        textual && isJson ? (
          <Button size="sm" onClick={format} disabled={Boolean(jsonError)}>
            Format
          </Button>
        ) : null
      }
    >
      {textual ? (
        <div className="space-y-1">
          <CodeEditor value={body} onChange={onBody} language={isJson ? 'json' : 'text'} label="Message body" />
          {jsonError ? (
            <p role="alert" className="text-xs text-red-700" data-testid="json-error">
              Not valid JSON: {jsonError}
            </p>
          ) : (
            <p className="text-xs text-zinc-500">{isJson ? 'Valid JSON.' : 'Plain text.'} The body is saved exactly as written.</p>
          )}
        </div>
      ) : (
        <div className="space-y-2 text-xs text-zinc-600">
          <p>
            {base.truncated ? `This body (${formatBytes(base.size)}) is too large to edit here` : `This body is binary (${formatBytes(base.size)})`}: replace it by uploading a file.
          </p>
          <input type="file" aria-label="Replacement body" onChange={(e) => void onFile(e.target.files?.[0])} className="text-xs" />
          {upload && (
            <p>
              Replacement: <span className="font-mono">{visibleText(upload.name)}</span>, {formatBytes(upload.size)}
            </p>
          )}
        </div>
      )}
    </Panel>
  )
}
