'use client'

import { useState } from 'react'
import { formatCount } from '@/lib/client/format'

/**
 * Untrusted text that may be one enormous token: the first `limit` characters, with a toggle for the rest,
 * so a 5,000-character value does not push everything else off the screen.
 */
export function ClampedText({ text, limit = 300, className }: { text: string; limit?: number; className?: string }) {
  const [open, setOpen] = useState(false)
  if (text.length <= limit) return <span className={className}>{text}</span>
  return (
    <span className={className}>
      {open ? text : `${text.slice(0, limit)}…`}{' '}
      <button type="button" onClick={() => setOpen(!open)} className="font-sans text-[11px] whitespace-nowrap text-brand hover:underline">
        {open ? 'show less' : `show all ${formatCount(text.length)} characters`}
      </button>
    </span>
  )
}
