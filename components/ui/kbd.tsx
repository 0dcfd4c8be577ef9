import type { ReactNode } from 'react'

export function Kbd({ children }: { children: ReactNode }) {
  return <kbd className="inline-flex h-4 min-w-4 items-center justify-center rounded border border-zinc-300 bg-white px-1 font-mono text-[10px] text-zinc-600">{children}</kbd>
}
