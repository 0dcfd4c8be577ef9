'use client'

import { useMemo, useState } from 'react'
import { Button } from '@/components/ui/button'
import { Tabs } from '@/components/ui/tabs'
import { formatBytes, visibleText } from '@/lib/client/format'
import { useCan } from '@/lib/client/use-session'
import type { MessageDetailDto } from '@/lib/shared/schemas/message'
import { base64ToBytes, hexDump } from './hex-dump'
import { JsonTree } from './json-tree'

type View = 'json' | 'text' | 'hex'

const parseJson = (text: string | null): { ok: true; value: unknown } | { ok: false } => {
  if (text === null) return { ok: false }
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/**
 * The server calls a body binary when it holds control characters, even if it is valid UTF-8 (a log line with
 * terminal colours); such a body still gets a text view, with the controls made visible.
 */
function utf8Text(base64: string, truncated: boolean): string | null {
  try {
    // `stream` leaves a character cut in half by the truncation out instead of failing on it.
    return new TextDecoder('utf-8', { fatal: true }).decode(base64ToBytes(base64), { stream: truncated })
  } catch {
    return null
  }
}

/** The body as pretty JSON, text or a hex dump; the API sends at most 256 KiB inline. */
export function BodyViewer({ id, body }: { id: string; body: MessageDetailDto['body'] }) {
  const canRaw = useCan('messages:raw')
  const json = useMemo(() => (body.encoding === 'json' && !body.truncated ? parseJson(body.text) : ({ ok: false } as const)), [body])
  const text = useMemo(() => body.text ?? utf8Text(body.base64 ?? '', body.truncated), [body])
  const [view, setView] = useState<View>(json.ok ? 'json' : body.text !== null ? 'text' : 'hex')
  const [tree, setTree] = useState({ depth: 2, generation: 0 })
  const bytes = useMemo(() => (view === 'hex' ? base64ToBytes(body.base64 ?? '') : null), [view, body.base64])
  const dump = useMemo(() => (bytes ? hexDump(bytes) : null), [bytes])
  const inlineBytes = body.truncated ? Math.floor(((body.base64 ?? '').length * 3) / 4) : body.size

  return (
    <div className="min-w-0 space-y-2">
      <div className="flex flex-wrap items-center gap-2">
        <Tabs
          label="Body view"
          value={view}
          onChange={setView}
          tabs={[
            { value: 'json', label: 'JSON', disabled: !json.ok },
            { value: 'text', label: 'Text', disabled: text === null },
            { value: 'hex', label: 'Hex' },
          ]}
        />
        {view === 'json' && (
          <>
            <Button variant="ghost" onClick={() => setTree({ depth: 99, generation: tree.generation + 1 })}>
              Expand all
            </Button>
            <Button variant="ghost" onClick={() => setTree({ depth: 1, generation: tree.generation + 1 })}>
              Collapse all
            </Button>
          </>
        )}
        <span className="ml-auto text-xs text-zinc-500">
          {formatBytes(body.size)} · {body.encoding}
        </span>
        {canRaw ? (
          <a href={`/api/messages/${id}/body`} download className="text-xs text-brand hover:underline">
            Download raw body
          </a>
        ) : (
          <span className="text-xs text-zinc-500" title="Your role sees bodies and headers redacted, as exports show them">
            redacted for your role
          </span>
        )}
      </div>
      {body.truncated && (
        <p role="note" className="rounded border border-amber-200 bg-amber-50 px-2 py-1 text-xs text-amber-900">
          This body is {formatBytes(body.size)}; only the first {formatBytes(inlineBytes)} are shown.{' '}
          {canRaw && (
            <a href={`/api/messages/${id}/body`} download className="font-medium underline">
              Download the whole body
            </a>
          )}
          .
        </p>
      )}
      <div className="max-h-[32rem] min-w-0 overflow-auto rounded border border-zinc-200 bg-zinc-50/60 p-2" data-testid="body-view">
        {view === 'json' && json.ok && <JsonTree value={json.value} openDepth={tree.depth} generation={tree.generation} />}
        {view === 'text' && <pre className="font-mono text-xs leading-5 break-all whitespace-pre-wrap">{visibleText(text ?? '')}</pre>}
        {view === 'hex' && dump && (
          <>
            <pre className="font-mono text-xs leading-5 whitespace-pre">{dump.text}</pre>
            {dump.shown < (bytes?.length ?? 0) && <p className="mt-1 text-xs text-zinc-500">Hex view shows the first {formatBytes(dump.shown)}; download the body for the rest.</p>}
          </>
        )}
        {body.size === 0 && <p className="text-xs text-zinc-500">(empty body)</p>}
      </div>
    </div>
  )
}
