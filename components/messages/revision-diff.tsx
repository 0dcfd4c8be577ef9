'use client'

import { diffLines } from 'diff'
import { useMemo } from 'react'
import { visibleText } from '@/lib/client/format'
import type { RevisionDiffDto } from '@/lib/shared/schemas/revision'
import { typeName, TypedValueView } from './typed-headers'

type Row = { left: string | null; right: string | null; kind: 'same' | 'changed' }

const MAX_ROWS = 2_000

/** Line pairs of a side-by-side diff: removed lines beside the added ones that replace them. */
function sideBySide(before: string, after: string): Row[] | null {
  const changes = diffLines(before, after, { maxEditLength: 5_000 })
  if (!changes) return null
  const rows: Row[] = []
  const lines = (value: string) => value.replace(/\n$/, '').split('\n')
  for (let i = 0; i < changes.length; i++) {
    const part = changes[i]
    if (!part.added && !part.removed) {
      for (const line of lines(part.value)) rows.push({ left: line, right: line, kind: 'same' })
      continue
    }
    const removed = part.removed ? lines(part.value) : []
    const next = part.removed && changes[i + 1]?.added ? changes[++i] : null
    const added = part.added ? lines(part.value) : next ? lines(next.value) : []
    for (let j = 0; j < Math.max(removed.length, added.length); j++) rows.push({ left: removed[j] ?? null, right: added[j] ?? null, kind: 'changed' })
  }
  return rows
}

/** The body before and after, side by side; text only (the body is hostile, never HTML). */
export function BodyDiff({ before, after }: { before: string; after: string }) {
  const rows = useMemo(() => sideBySide(before, after), [before, after])
  if (before === after) return <p className="text-xs text-zinc-500">The body is unchanged.</p>
  if (!rows) return <p className="text-xs text-zinc-500">Too many changed lines to show side by side.</p>
  return (
    <div className="max-h-96 overflow-auto rounded border border-zinc-200" data-testid="body-diff">
      <table className="w-full table-fixed border-collapse font-mono text-[11px] leading-4">
        <thead className="sticky top-0 bg-zinc-50 text-left text-[11px] text-zinc-500">
          <tr>
            <th className="w-1/2 border-b border-zinc-200 px-2 py-1 font-medium">Before</th>
            <th className="w-1/2 border-b border-l border-zinc-200 px-2 py-1 font-medium">After</th>
          </tr>
        </thead>
        <tbody>
          {rows.slice(0, MAX_ROWS).map((row, i) => (
            <tr key={i} className="align-top">
              <td className={`px-2 break-all whitespace-pre-wrap ${row.kind === 'changed' && row.left !== null ? 'bg-red-50 text-red-900' : 'text-zinc-700'}`}>
                {row.left === null ? '' : `${row.kind === 'changed' ? '− ' : '  '}${visibleText(row.left)}`}
              </td>
              <td className={`border-l border-zinc-200 px-2 break-all whitespace-pre-wrap ${row.kind === 'changed' && row.right !== null ? 'bg-green-50 text-green-900' : 'text-zinc-700'}`}>
                {row.right === null ? '' : `${row.kind === 'changed' ? '+ ' : '  '}${visibleText(row.right)}`}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length > MAX_ROWS && <p className="px-2 py-1 text-xs text-zinc-500">{rows.length - MAX_ROWS} more lines not shown.</p>}
    </div>
  )
}

/** A header value with its AMQP type (a change of type alone is a change). */
function Typed({ value }: { value: unknown }) {
  if (value === undefined) return <span className="text-zinc-400">—</span>
  return (
    <>
      <TypedValueView value={value} /> <span className="text-[10px] text-zinc-400">{typeName(value)}</span>
    </>
  )
}

const CHANGE_STYLE = { added: 'text-green-800', removed: 'text-red-800', changed: 'text-amber-800' } as const

/** Header and property changes: name, before, after, each value with its AMQP type. */
export function FieldChanges({ diff }: { diff: Pick<RevisionDiffDto, 'headers' | 'properties'> }) {
  if (diff.headers.length === 0 && diff.properties.length === 0) return <p className="text-xs text-zinc-500">Headers and properties are unchanged.</p>
  return (
    <table className="w-full table-fixed border-collapse text-xs" data-testid="header-diff">
      <thead className="text-left text-[11px] text-zinc-500">
        <tr>
          <th className="w-[28%] border-b border-zinc-200 px-2 py-1 font-medium">Field</th>
          <th className="border-b border-zinc-200 px-2 py-1 font-medium">Before</th>
          <th className="border-b border-zinc-200 px-2 py-1 font-medium">After</th>
        </tr>
      </thead>
      <tbody>
        {diff.headers.map((h) => (
          <tr key={`h:${h.name}`} className="align-top">
            <td className={`border-b border-zinc-100 px-2 py-1 font-mono break-all ${CHANGE_STYLE[h.change]}`}>
              {h.change === 'added' ? '+ ' : h.change === 'removed' ? '− ' : '~ '}
              {visibleText(h.name)}
            </td>
            <td className="border-b border-zinc-100 px-2 py-1 font-mono break-all"><Typed value={h.before} /></td>
            <td className="border-b border-zinc-100 px-2 py-1 font-mono break-all"><Typed value={h.after} /></td>
          </tr>
        ))}
        {diff.properties.map((p) => (
          <tr key={`p:${p.name}`} className="align-top">
            <td className="border-b border-zinc-100 px-2 py-1 font-mono break-all text-amber-800">property {visibleText(p.name)}</td>
            <td className="border-b border-zinc-100 px-2 py-1 font-mono break-all">{p.before === null ? <span className="text-zinc-400">—</span> : visibleText(JSON.stringify(p.before))}</td>
            <td className="border-b border-zinc-100 px-2 py-1 font-mono break-all">{p.after === null ? <span className="text-zinc-400">—</span> : visibleText(JSON.stringify(p.after))}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

/** A stored diff's body part: the unified patch, line by line (text only). */
export function StoredBodyDiff({ body }: { body: RevisionDiffDto['body'] }) {
  if (body === null) return <p className="text-xs text-zinc-500">Body unchanged.</p>
  if (body.kind === 'binary') {
    return (
      <p className="font-mono text-xs text-zinc-700">
        Binary body replaced: {body.beforeSize} → {body.afterSize} bytes (sha256 {body.beforeSha256.slice(0, 12)}… → {body.afterSha256.slice(0, 12)}…)
      </p>
    )
  }
  const lines = body.patch.split("\n").slice(3, 1_003)
  return (
    <pre className="max-h-72 overflow-auto rounded border border-zinc-200 bg-zinc-50 p-2 font-mono text-[11px] leading-4 break-all whitespace-pre-wrap">
      {lines.map((line, i) => (
        <span key={i} className={`block ${line.startsWith('+') ? 'bg-green-50 text-green-900' : line.startsWith('-') ? 'bg-red-50 text-red-900' : line.startsWith('@@') ? 'text-zinc-400' : 'text-zinc-700'}`}>
          {visibleText(line) || ' '}
        </span>
      ))}
    </pre>
  )
}
