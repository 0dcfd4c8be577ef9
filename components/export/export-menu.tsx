'use client'

import { useEffect, useId, useRef, useState } from 'react'
import { Button } from '@/components/ui/button'
import { cn } from '@/lib/client/cn'
import { formatCount } from '@/lib/client/format'
import { exportUrl, type ExportSelection } from '@/lib/client/export-url'

const FORMATS = [
  { format: 'csv', label: 'CSV', hint: 'one row per message, opens in a spreadsheet' },
  { format: 'jsonl', label: 'JSON Lines', hint: 'every stored field, bodies byte for byte' },
  { format: 'md', label: 'Markdown ticket', hint: 'summary and sample messages for a bug report' },
] as const

type ExportMenuProps = {
  /** What to export: explicit ids, a whole group, or the message-list filters of the page URL. */
  selection: ExportSelection
  label?: string
  /** Messages the selection holds, when known: shown in the menu. */
  count?: number | null
  estimated?: boolean
  className?: string
}

/**
 * "Export ▾": plain download links to GET /api/export, so the browser streams the file to disk (a million rows never
 * pass through the page). Every export is redacted on the server.
 */
export function ExportMenu({ selection, label = 'Export', count, estimated, className }: Readonly<ExportMenuProps>) {
  const [open, setOpen] = useState(false)
  const root = useRef<HTMLDivElement>(null)
  const menuId = useId()

  useEffect(() => {
    if (!open) return
    const onPointer = (event: PointerEvent) => {
      if (!root.current?.contains(event.target as Node)) setOpen(false)
    }
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape') setOpen(false)
    }
    document.addEventListener('pointerdown', onPointer)
    document.addEventListener('keydown', onKey)
    return () => {
      document.removeEventListener('pointerdown', onPointer)
      document.removeEventListener('keydown', onKey)
    }
  }, [open])

  return (
    <div ref={root} className={cn('relative', className)}>
      <Button aria-haspopup="menu" aria-expanded={open} aria-controls={open ? menuId : undefined} onClick={() => setOpen((o) => !o)}>
        {label}
        <svg aria-hidden viewBox="0 0 16 16" className="size-3 fill-current">
          <path d="M4 6l4 4 4-4z" />
        </svg>
      </Button>
      {open && (
        <div id={menuId} role="menu" aria-label="Export format" className="absolute right-0 z-30 mt-1 w-72 rounded-md border border-zinc-200 bg-white py-1 shadow-lg">
          {count !== undefined && count !== null && (
            <p className="px-3 pt-1 pb-1.5 text-xs text-zinc-500">
              {estimated ? '~' : ''}
              {formatCount(count)} message{count === 1 ? '' : 's'} · secrets redacted
            </p>
          )}
          {FORMATS.map((f) => (
            <a
              key={f.format}
              role="menuitem"
              href={exportUrl(f.format, selection)}
              download
              onClick={() => setOpen(false)}
              className="block px-3 py-1.5 hover:bg-zinc-50 focus-visible:bg-zinc-50 focus-visible:outline-none"
            >
              <span className="block text-[13px] font-medium text-zinc-900">{f.label}</span>
              <span className="block text-xs text-zinc-500">{f.hint}</span>
            </a>
          ))}
        </div>
      )}
    </div>
  )
}
