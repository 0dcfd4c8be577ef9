'use client'

import { useEffect, useState } from 'react'
import { Dialog } from '@/components/ui/dialog'
import { Kbd } from '@/components/ui/kbd'
import { isTypingTarget } from '@/lib/client/use-row-cursor'

/** Every keyboard shortcut the app has (lib/client/use-row-cursor.ts, components/ui/dialog.tsx), and where it works. */
const SHORTCUTS: { keys: string[]; what: string; where: string }[] = [
  { keys: ['j', 'k'], what: 'Move the cursor down, up', where: 'Groups, messages, replays' },
  { keys: ['↵'], what: 'Open the row under the cursor', where: 'Groups, messages, replays' },
  { keys: ['x'], what: 'Select the row under the cursor', where: 'Messages' },
  { keys: ['↑', '↓'], what: 'Move between findings (j, k too); ↵ opens one', where: 'Topology' },
  { keys: ['/'], what: 'Focus the search box', where: 'Pages with a search box' },
  { keys: ['↵'], what: 'Confirm', where: 'Dialogs' },
  { keys: ['Esc'], what: 'Close the dialog or menu; leave a search box', where: 'Everywhere' },
  { keys: ['Esc'], what: 'Close the open finding, then the node’s panel', where: 'Topology' },
  { keys: ['?'], what: 'Show this help', where: 'Everywhere' },
]

/** `?` (outside text fields) opens the list of shortcuts; Esc closes it. Also opened by the header's button. */
export function ShortcutHelp() {
  const [open, setOpen] = useState(false)
  useEffect(() => {
    function onKeyDown(event: KeyboardEvent) {
      if (event.key !== '?' || event.defaultPrevented || event.metaKey || event.ctrlKey || event.altKey || isTypingTarget(event.target)) return
      event.preventDefault()
      setOpen(true)
    }
    window.addEventListener('keydown', onKeyDown)
    return () => window.removeEventListener('keydown', onKeyDown)
  }, [])
  return (
    <>
      <button
        type="button"
        onClick={() => setOpen(true)}
        aria-label="Keyboard shortcuts"
        title="Keyboard shortcuts (?)"
        className="flex size-6 shrink-0 items-center justify-center rounded-md text-zinc-500 hover:bg-zinc-100 hover:text-zinc-900"
      >
        <Kbd>?</Kbd>
      </button>
      {open && (
        <Dialog title="Keyboard shortcuts" description="Keys do nothing while you type in a field, or with Ctrl, Alt or ⌘ held." onClose={() => setOpen(false)}>
          <table className="w-full text-left text-[13px]">
            <thead className="sr-only">
              <tr>
                <th>Keys</th>
                <th>Action</th>
                <th>Where</th>
              </tr>
            </thead>
            <tbody>
              {SHORTCUTS.map((s) => (
                <tr key={`${s.keys.join()}-${s.where}`} className="border-b border-zinc-100 last:border-0">
                  <td className="w-20 py-1.5">
                    <span className="inline-flex gap-1">
                      {s.keys.map((k) => (
                        <Kbd key={k}>{k}</Kbd>
                      ))}
                    </span>
                  </td>
                  <td className="py-1.5 text-zinc-800">{s.what}</td>
                  <td className="py-1.5 text-right text-xs text-zinc-500">{s.where}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Dialog>
      )}
    </>
  )
}
