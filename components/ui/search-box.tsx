'use client'

import { useEffect, useRef, useState } from 'react'
import { cn } from '@/lib/client/cn'
import { Kbd } from './kbd'

type SearchBoxProps = { value: string; onChange: (value: string) => void; placeholder?: string; className?: string; label?: string; delayMs?: number }

/** The page's search field (`/` focuses it). Commits after a pause in typing, or at once on Enter. */
export function SearchBox({ value, onChange, placeholder = 'Search', className, label = 'Search', delayMs = 300 }: SearchBoxProps) {
  const [text, setText] = useState(value)
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined)
  const committed = useRef(value)

  // The URL changed under us (back button, a link): show what it says.
  useEffect(() => {
    if (value !== committed.current) {
      committed.current = value
      setText(value)
    }
  }, [value])
  useEffect(() => () => clearTimeout(timer.current), [])

  const commit = (next: string) => {
    clearTimeout(timer.current)
    if (next.trim() === committed.current.trim()) return
    committed.current = next
    onChange(next.trim())
  }

  return (
    <div className={cn('relative min-w-0', className)}>
      <svg aria-hidden viewBox="0 0 16 16" className="pointer-events-none absolute top-1/2 left-2 size-3.5 -translate-y-1/2 fill-none stroke-zinc-400" strokeWidth={1.6}>
        <circle cx="7" cy="7" r="4.5" />
        <path d="m10.5 10.5 3 3" strokeLinecap="round" />
      </svg>
      <input
        data-search-input
        type="search"
        aria-label={label}
        value={text}
        placeholder={placeholder}
        maxLength={200}
        onChange={(e) => {
          const next = e.target.value
          setText(next)
          clearTimeout(timer.current)
          timer.current = setTimeout(() => commit(next), delayMs)
        }}
        onKeyDown={(e) => {
          if (e.key === 'Enter') commit(text)
          // Escape leaves the field (back to j/k); a search input would otherwise also clear itself.
          if (e.key === 'Escape') {
            e.preventDefault()
            e.currentTarget.blur()
          }
        }}
        className="h-7 w-full rounded-md border border-zinc-300 bg-white pr-8 pl-7 text-[13px] placeholder:text-zinc-400 focus:border-brand focus:ring-2 focus:ring-brand/20 focus:outline-none [&::-webkit-search-cancel-button]:hidden"
      />
      {!text && (
        <span className="pointer-events-none absolute top-1/2 right-2 -translate-y-1/2">
          <Kbd>/</Kbd>
        </span>
      )}
    </div>
  )
}
