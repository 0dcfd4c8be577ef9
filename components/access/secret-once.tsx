'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'

/** A secret shown once (an API token, an invitation link), with a copy button. */
export function SecretOnce({ label, value, note, onDone }: { label: string; value: string; note: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false)
  return (
    <div role="status" className="space-y-1.5 rounded-md border border-emerald-200 bg-emerald-50 p-3">
      <p className="text-xs font-medium text-emerald-900">{label}</p>
      <div className="flex items-center gap-2">
        <code data-testid="secret-once" className="min-w-0 flex-1 truncate rounded border border-emerald-200 bg-white px-2 py-1 font-mono text-xs text-zinc-900 select-all" title={value}>
          {value}
        </code>
        <Button
          onClick={() => {
            void navigator.clipboard?.writeText(value).then(() => setCopied(true))
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </Button>
        <Button variant="ghost" onClick={onDone}>
          Done
        </Button>
      </div>
      <p className="text-xs text-emerald-900/80">{note}</p>
    </div>
  )
}
