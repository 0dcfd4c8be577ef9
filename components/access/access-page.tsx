'use client'

import { useCan } from '@/lib/client/use-session'
import { TokensPanel } from './tokens-panel'
import { UsersPanel } from './users-panel'

/** Who may do what: people and their roles (admins), and API tokens (everyone, their own). */
export function AccessPage() {
  const isAdmin = useCan('admin')
  return (
    <div className="space-y-4">
      <div>
        <h1 className="text-base font-semibold">Access</h1>
        <p className="text-xs text-zinc-500">
          Viewers browse and export (redacted); operators also see raw messages, replay, resolve and pause; admins manage sources, settings and people. A role
          limited to a queue pattern applies to those sources only.
        </p>
      </div>
      {isAdmin && <UsersPanel />}
      <TokensPanel />
    </div>
  )
}
