'use client'

import { relativeTime } from '@/lib/client/format'
import { useTimeFormat } from '@/lib/client/use-display-prefs'
import { useNow } from '@/lib/client/use-now'

/** "3m ago", with the absolute time in the chosen zone and the ISO instant on hover. */
export function RelativeTime({ iso, className }: { iso: string | null | undefined; className?: string }) {
  const now = useNow()
  const time = useTimeFormat()
  if (!iso) return <span className={className}>—</span>
  return (
    <time dateTime={iso} title={time.title(iso)} className={className}>
      {now ? relativeTime(iso, now) : `${time.absolute(iso)} ${time.zoneLabel(iso)}`}
    </time>
  )
}

/** "2026-11-30 14:05:09 UTC+1": the time in the chosen zone (UTC or the browser's), the zone always shown. */
export function AbsoluteTime({ iso, className }: { iso: string | null | undefined; className?: string }) {
  const time = useTimeFormat()
  if (!iso) return <span className={className}>—</span>
  return (
    <time dateTime={iso} title={time.title(iso)} className={className}>
      {time.absolute(iso)} <span className="text-zinc-400">{time.zoneLabel(iso)}</span>
    </time>
  )
}
