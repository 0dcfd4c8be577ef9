'use client'

import { createContext, useContext, type ReactNode } from 'react'
import { bindingsAllow } from '@/lib/shared/can'
import type { Permission } from '@/lib/shared/roles'
import type { SessionDto } from '@/lib/shared/schemas/user'

const SessionContext = createContext<SessionDto | null>(null)

/** The signed-in user of this page, from the server's render (app/(app)/layout.tsx). */
export function SessionProvider({ session, children }: { session: SessionDto; children: ReactNode }) {
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>
}

export function useSession(): SessionDto | null {
  return useContext(SessionContext)
}

/** Whether to offer an action; the API decides (a viewer sees no Replay button, and the API refuses anyway). */
export function useCan(permission: Permission): boolean {
  const session = useContext(SessionContext)
  return session ? bindingsAllow(session.roles, permission) : false
}
