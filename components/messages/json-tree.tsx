'use client'

import { createContext, useContext, useState } from 'react'
import { ClampedText } from '@/components/ui/clamped-text'
import { visibleText } from '@/lib/client/format'

/**
 * A collapsible view of a parsed JSON body. Everything, keys included, is rendered as React text: a body
 * full of markup shows as markup. Large containers render their first children only, on demand.
 */

const PAGE = 200

const OpenDepth = createContext(2)

type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

function Scalar({ value }: { value: JsonValue }) {
  if (value === null) return <span className="text-zinc-500">null</span>
  if (typeof value === 'boolean') return <span className="text-violet-700">{String(value)}</span>
  if (typeof value === 'number') return <span className="text-sky-700">{String(value)}</span>
  return (
    <span className="break-all whitespace-pre-wrap text-emerald-800">
      &quot;
      <ClampedText text={visibleText(value as string)} limit={1000} />
      &quot;
    </span>
  )
}

function Key({ name }: { name: string | number | null }) {
  if (name === null) return null
  if (typeof name === 'number') return <span className="text-zinc-400">{name}: </span>
  return <span className="break-all text-zinc-800">&quot;{visibleText(name)}&quot;: </span>
}

function Node({ name, value, depth, last }: { name: string | number | null; value: JsonValue; depth: number; last: boolean }) {
  const openDepth = useContext(OpenDepth)
  const isArray = Array.isArray(value)
  const container = value !== null && typeof value === 'object'
  const entries: [string | number, JsonValue][] = container ? (isArray ? (value as JsonValue[]).map((v, i) => [i, v]) : Object.entries(value as Record<string, JsonValue>)) : []
  const [open, setOpen] = useState(depth < openDepth && entries.length <= 500)
  const [shown, setShown] = useState(PAGE)
  const comma = last ? '' : ','

  if (!container) {
    return (
      <div className="pl-4">
        <Key name={name} />
        <Scalar value={value} />
        {comma}
      </div>
    )
  }
  const [openBrace, closeBrace] = isArray ? ['[', ']'] : ['{', '}']
  if (entries.length === 0) {
    return (
      <div className="pl-4">
        <Key name={name} />
        {openBrace}
        {closeBrace}
        {comma}
      </div>
    )
  }
  return (
    <div className="pl-4">
      <button
        type="button"
        onClick={() => setOpen(!open)}
        aria-expanded={open}
        className="-ml-4 w-4 text-left text-zinc-400 hover:text-zinc-900"
        aria-label={open ? 'Collapse' : 'Expand'}
      >
        {open ? '▾' : '▸'}
      </button>
      <Key name={name} />
      {openBrace}
      {!open && (
        <button type="button" onClick={() => setOpen(true)} className="mx-1 rounded bg-zinc-100 px-1 text-xs text-zinc-500 hover:bg-zinc-200">
          {entries.length} {isArray ? (entries.length === 1 ? 'item' : 'items') : entries.length === 1 ? 'key' : 'keys'}
        </button>
      )}
      {open && (
        <div className="border-l border-zinc-100">
          {entries.slice(0, shown).map(([k, v], i) => (
            <Node key={k} name={isArray ? i : k} value={v} depth={depth + 1} last={i === entries.length - 1} />
          ))}
          {entries.length > shown && (
            <button type="button" onClick={() => setShown(shown + PAGE * 5)} className="ml-4 text-xs text-brand hover:underline">
              show {Math.min(PAGE * 5, entries.length - shown)} more of {entries.length - shown} remaining
            </button>
          )}
        </div>
      )}
      {closeBrace}
      {comma}
    </div>
  )
}

/** `generation` remounts the tree, so "expand all" / "collapse all" reset every node. */
export function JsonTree({ value, openDepth, generation }: { value: unknown; openDepth: number; generation: number }) {
  return (
    <OpenDepth.Provider value={openDepth}>
      <div className="-ml-4 font-mono text-xs leading-5" key={generation}>
        <Node name={null} value={value as JsonValue} depth={0} last />
      </div>
    </OpenDepth.Provider>
  )
}
