'use client'

import { useEffect, useRef, useState } from 'react'
import { Button } from '@/components/ui/button'

/** Copies `text`; where the page may not write the clipboard (plain http on another host) it says so. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle')
  const reset = useRef<ReturnType<typeof setTimeout>>(undefined)
  useEffect(() => () => clearTimeout(reset.current), [])
  return (
    <Button
      onClick={async () => {
        try {
          if (!navigator.clipboard?.writeText) throw new Error('no clipboard')
          await navigator.clipboard.writeText(text)
          setState('copied')
        } catch {
          setState('failed')
        }
        clearTimeout(reset.current)
        reset.current = setTimeout(() => setState('idle'), 2_000)
      }}
    >
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Select and copy by hand' : label}
    </Button>
  )
}

/** Saves `text` as a file, made in the browser (nothing goes to the server). */
export function DownloadButton({ text, filename, label, type = 'application/json' }: { text: string; filename: string; label: string; type?: string }) {
  return (
    <Button
      onClick={() => {
        const url = URL.createObjectURL(new Blob([text], { type }))
        const a = document.createElement('a')
        a.href = url
        a.download = filename
        a.click()
        setTimeout(() => URL.revokeObjectURL(url), 0)
      }}
    >
      {label}
    </Button>
  )
}
