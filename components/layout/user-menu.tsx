'use client'

import Link from 'next/link'
import { useEffect, useRef, useState } from 'react'
import { apiSend } from '@/lib/client/api'
import { useSession } from '@/lib/client/use-session'
import { ROLE_RANK, type Role } from '@/lib/shared/roles'
import { DisplayPrefsControls } from './display-prefs'

function roleSummary(roles: { role: Role; sourcePattern: string | null }[]): string {
  if (roles.length === 0) return 'no role'
  const best = [...roles].sort((a, b) => ROLE_RANK[b.role] - ROLE_RANK[a.role])[0]
  return best.sourcePattern ? `${best.role} · ${best.sourcePattern}` : best.role
}

/** Who is signed in, with what role; their API tokens; sign out. */
export function UserMenu() {
  const session = useSession()
  const [open, setOpen] = useState(false)
  const [busy, setBusy] = useState(false)
  const ref = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (!open) return
    const close = (e: MouseEvent | KeyboardEvent) => {
      if (e instanceof KeyboardEvent ? e.key === 'Escape' : !ref.current?.contains(e.target as Node)) setOpen(false)
    }
    document.addEventListener('mousedown', close)
    document.addEventListener('keydown', close)
    return () => {
      document.removeEventListener('mousedown', close)
      document.removeEventListener('keydown', close)
    }
  }, [open])
  if (!session?.user) return null
  const name = session.user.email ?? session.user.actor
  const signOut = async () => {
    setBusy(true)
    try {
      await apiSend('POST', '/api/auth/sign-out')
    } finally {
      // A full page load, not router.push: nothing the signed-out user's pages cached may survive into the next session.
      // eslint-disable-next-line @next/next/no-location-assign-relative-destination
      window.location.assign('/sign-in')
    }
  }
  return (
    <div ref={ref} className="relative min-w-0">
      <button
        type="button"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-label={`Signed in as ${name}`}
        onClick={() => setOpen((o) => !o)}
        className="flex h-7 w-full max-w-56 min-w-0 items-center gap-1.5 rounded-md px-2 text-xs text-zinc-600 hover:bg-zinc-100 hover:text-zinc-900"
      >
        <span className="truncate">{name}</span>
        <span data-testid="user-role" className="shrink-0 rounded-sm bg-zinc-100 px-1 py-px font-medium text-zinc-700">
          {roleSummary(session.roles)}
        </span>
      </button>
      {open && (
        <div role="menu" className="absolute right-0 z-30 mt-1 w-64 rounded-md border border-zinc-200 bg-white py-1 text-[13px] shadow-md">
          <p className="truncate px-3 py-1.5 text-xs text-zinc-500">{name}</p>
          <div className="border-y border-zinc-100 py-1">
            <DisplayPrefsControls />
          </div>
          <Link role="menuitem" href="/settings/access" className="block px-3 py-1.5 text-zinc-800 hover:bg-zinc-50" onClick={() => setOpen(false)}>
            Access and API tokens
          </Link>
          {session.user.via === 'session' && (
            <button role="menuitem" type="button" disabled={busy} onClick={signOut} className="block w-full px-3 py-1.5 text-left text-zinc-800 hover:bg-zinc-50 disabled:opacity-50">
              Sign out
            </button>
          )}
        </div>
      )}
    </div>
  )
}
