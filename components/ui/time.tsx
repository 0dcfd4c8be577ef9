'use client'

import { absoluteTime, relativeTime, timeTitle } from '@/lib/client/format'
import { useNow } from '@/lib/client/use-now'

/** "3m ago", with the absolute local and UTC time on hover. */
export function RelativeTime({ iso, className }: { iso: string | null | undefined; className?: string }) {
  const now = useNow()
  if (!iso) return <span className={className}>—</span>
  return (
    <time dateTime={iso} title={timeTitle(iso)} className={className}>
      {now ? relativeTime(iso, now) : absoluteTime(iso)}
    </time>
  )
}

export function AbsoluteTime({ iso, className }: { iso: string | null | undefined; className?: string }) {
  if (!iso) return <span className={className}>—</span>
  return (
    <time dateTime={iso} title={timeTitle(iso)} className={className}>
      {absoluteTime(iso)}
    </time>
  )
}
