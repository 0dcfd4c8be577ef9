import type { ReactNode } from 'react'
import { AppHeader } from '@/components/layout/app-header'
import { requirePageSession } from '@/lib/server/auth/page-principal'
import { SessionProvider } from '@/lib/client/use-session'

/** The dashboard: signed-in users only (everyone else goes to /sign-in and comes back). */
export default async function DashboardLayout({ children }: { children: ReactNode }) {
  const { session } = await requirePageSession()
  return (
    <SessionProvider session={session}>
      <AppHeader />
      <main className="mx-auto max-w-[1600px] min-w-0 px-4 py-4">{children}</main>
    </SessionProvider>
  )
}
