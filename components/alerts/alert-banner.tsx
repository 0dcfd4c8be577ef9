'use client'

import Link from 'next/link'
import { formatRate, visibleText } from '@/lib/client/format'
import { useAlerts } from '@/lib/client/use-alerts'
import { useCan } from '@/lib/client/use-session'

/**
 * The header's alarm: a red pill linking to /alerts while anything is firing (polled every 15 s). It sits in the
 * header's fixed-height row, so it appearing or going away moves nothing on the page. The live region is always
 * there, so screen readers hear it appear.
 */
export function AlertBanner() {
  // A role limited to some sources does not see alerts (they tell of every source).
  const { data } = useAlerts({ enabled: useCan('alerts:read') })
  const firing = data?.firing ?? []
  const first = firing[0]
  const one = first && firing.length === 1 ? `${visibleText(first.subject.label)}${first.ratePerMinute !== null ? ` · ${formatRate(first.ratePerMinute)}/min` : ''}` : null
  return (
    <div aria-live="polite" className="flex min-w-0 items-center">
      {first && (
        <Link
          href="/alerts"
          data-testid="alert-banner"
          title={firing.map((e) => visibleText(e.text)).join('\n')}
          className="flex h-6 max-w-80 min-w-0 items-center gap-1.5 rounded-full bg-red-600 px-2.5 text-xs font-medium text-white shadow-xs hover:bg-red-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-red-600"
        >
          <span aria-hidden className="inline-block size-1.5 shrink-0 rounded-full bg-white" />
          <span className="shrink-0">{one ? 'Alert firing:' : `${firing.length} alerts firing`}</span>
          {one && <span className="min-w-0 truncate font-mono font-normal">{one}</span>}
        </Link>
      )}
    </div>
  )
}
