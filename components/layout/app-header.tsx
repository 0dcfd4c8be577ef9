'use client'

import Link from 'next/link'
import { usePathname } from 'next/navigation'
import { cn } from '@/lib/client/cn'
import { AlertBanner } from '@/components/alerts/alert-banner'
import { useCan } from '@/lib/client/use-session'
import type { Permission } from '@/lib/shared/roles'
import { ShortcutHelp } from './shortcut-help'
import { UserMenu } from './user-menu'

const NAV: { href: string; label: string; match: (p: string) => boolean; permission?: Permission }[] = [
  { href: '/', label: 'Groups', match: (p: string) => p === '/' || p.startsWith('/groups') },
  { href: '/messages', label: 'Messages', match: (p: string) => p.startsWith('/messages') },
  { href: '/replays', label: 'Replays', match: (p: string) => p.startsWith('/replays') },
  { href: '/pauses', label: 'Pauses', match: (p: string) => p.startsWith('/pauses') },
  { href: '/alerts', label: 'Alerts', match: (p: string) => p.startsWith('/alerts') },
  { href: '/audit', label: 'Audit', match: (p: string) => p.startsWith('/audit'), permission: 'audit:read' },
  { href: '/topology', label: 'Topology', match: (p: string) => p.startsWith('/topology') },
  { href: '/sources', label: 'Sources', match: (p: string) => p.startsWith('/sources') },
  { href: '/settings', label: 'Settings', match: (p: string) => p.startsWith('/settings') && !p.startsWith('/settings/access'), permission: 'admin' },
]

export function AppHeader() {
  const pathname = usePathname() ?? '/'
  const canAudit = useCan('audit:read')
  const isAdmin = useCan('admin')
  const allowed = (p?: Permission) => !p || (p === 'admin' ? isAdmin : canAudit)
  return (
    <header className="sticky top-0 z-20 border-b border-zinc-200 bg-white/95 backdrop-blur">
      <div className="mx-auto flex h-10 max-w-[1600px] items-center gap-4 px-4 xl:gap-6">
        <Link href="/" className="flex shrink-0 items-center gap-1.5 font-semibold tracking-tight text-zinc-900">
          <span aria-hidden className="inline-block size-2.5 rounded-sm bg-brand" />
          Lazarus
        </Link>
        <nav className="flex h-full shrink-0 items-stretch gap-0.5 xl:gap-1" aria-label="Main">
          {NAV.filter((item) => allowed(item.permission)).map((item) => {
            const active = item.match(pathname)
            return (
              <Link
                key={item.href}
                href={item.href}
                aria-current={active ? 'page' : undefined}
                className={cn('flex items-center border-b-2 px-2 text-zinc-600 hover:text-zinc-900', active ? 'border-brand font-medium text-zinc-900' : 'border-transparent')}
              >
                {item.label}
              </Link>
            )
          })}
        </nav>
        <AlertBanner />
        <div className="ml-auto flex min-w-0 items-center gap-1">
          <ShortcutHelp />
          <UserMenu />
        </div>
      </div>
    </header>
  )
}
