'use client'

import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { Panel, Stat } from '@/components/ui/panel'
import { Skeleton } from '@/components/ui/skeleton'
import { ErrorState } from '@/components/ui/states'
import { AbsoluteTime, RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { compactCount, formatCount, plural, visibleText } from '@/lib/client/format'
import { useTimeFormat } from '@/lib/client/use-display-prefs'
import { useRetentionStatus } from '@/lib/client/use-retention'
import type { RetentionStatusDto } from '@/lib/shared/schemas/retention'

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB']

/** 1.4 GiB, 312 MiB, 8.0 KiB: one decimal below 100, none above. */
export function humanBytes(bytes: number): string {
  let n = bytes
  let unit = 0
  while (n >= 1024 && unit < UNITS.length - 1) {
    n /= 1024
    unit++
  }
  return unit === 0 ? `${n} B` : `${n < 100 ? n.toFixed(1) : Math.round(n)} ${UNITS[unit]}`
}

/** "100,000+" when the count stopped at the cap. */
const capped = (n: number, cap: number) => (n >= cap ? `${formatCount(cap)}+` : formatCount(n))

function LastRun({ run }: { run: RetentionStatusDto['lastRun'] }) {
  if (!run) return <span className="text-zinc-400">not yet</span>
  return (
    <span className="text-sm font-normal">
      <RelativeTime iso={run.startedAt} /> · {run.error ? <span className="text-red-700">failed</span> : run.finishedAt ? `${formatCount(run.deleted)} deleted` : 'running…'}
    </span>
  )
}

function PanelSkeleton() {
  return (
    <div aria-busy className="space-y-3">
      <div className="grid grid-cols-2 gap-3 sm:grid-cols-5">
        {Array.from({ length: 5 }, (_, i) => (
          <div key={i} className="space-y-1.5">
            <Skeleton className="h-2.5 w-16" />
            <Skeleton className="h-4 w-20" />
          </div>
        ))}
      </div>
      <Skeleton className="h-40 w-full" />
    </div>
  )
}

/**
 * The store's size per table and what retention removes next: replayed and resolved messages whose status changed
 * more than the retention period ago (dead and held ones never go). Self-contained: mount it anywhere.
 */
export function RetentionPanel({ className }: { className?: string }) {
  const { data, error, isPending, isFetching, refetch } = useRetentionStatus()
  return (
    <Panel
      title="Retention and store size"
      className={className}
      actions={isFetching && !isPending ? <span className="text-xs text-zinc-400">updating…</span> : null}
    >
      {isPending ? (
        <PanelSkeleton />
      ) : error || !data ? (
        <ErrorState title="Could not load the retention status" error={error} onRetry={() => void refetch()} />
      ) : (
        <RetentionBody status={data} />
      )}
    </Panel>
  )
}

const STORE_COLUMNS: DataColumn[] = [
  { header: 'Table', width: 'w-48' },
  {},
  { header: 'Rows (est.)', width: 'w-28', align: 'right' },
  { header: 'Size', width: 'w-24', align: 'right' },
]

function RetentionBody({ status }: { status: RetentionStatusDto }) {
  const time = useTimeFormat()
  const off = status.retentionDays === 0
  const largest = Math.max(1, ...status.store.tables.map((t) => t.bytes))
  return (
    <div className="space-y-3" data-testid="retention-panel">
      <div className="grid grid-cols-2 gap-3 sm:grid-cols-5">
        <Stat label="Retention" value={off ? 'off' : plural(status.retentionDays, 'day')} title={off ? 'LAZARUS_RETENTION_DAYS=0: nothing is ever deleted' : 'LAZARUS_RETENTION_DAYS'} />
        <Stat label="Store size" value={humanBytes(status.store.totalBytes)} title={`${formatCount(status.store.totalBytes)} bytes, tables with their indexes`} />
        <Stat
          label="Removes now"
          value={off ? '—' : <span className={cn(status.eligibleNow > 0 && 'text-amber-700')}>{capped(status.eligibleNow, status.cap)}</span>}
          title={status.cutoff ? `replayed or resolved before ${time.title(status.cutoff)}` : undefined}
        />
        <Stat label="Within 24 h" value={off ? '—' : capped(status.eligibleWithin24h, status.cap)} title="including those it removes now" />
        <Stat label="Last run" value={<LastRun run={status.lastRun} />} title={status.lastRun ? time.title(status.lastRun.startedAt) : undefined} />
      </div>
      {status.lastRun?.error && (
        <p role="alert" className="rounded border border-red-200 bg-red-50 px-2 py-1 text-xs break-words text-red-800">
          Last run failed: {visibleText(status.lastRun.error)}
        </p>
      )}
      <DataTable label="Store size by table" columns={STORE_COLUMNS}>
        {status.store.tables.map((t) => (
          <tr key={t.name} data-table={t.name}>
            <td className="truncate font-mono text-xs">{t.name}</td>
            <td>
              <span aria-hidden className="block h-1.5 rounded-full bg-brand/40" style={{ width: `${Math.max((t.bytes / largest) * 100, 0.5)}%` }} />
            </td>
            {/* The planner's estimate: 0 also for a table not analysed yet, so it reads as "unknown". */}
            <td className="text-right text-zinc-600 tabular-nums" title={t.rows > 0 ? `about ${formatCount(t.rows)} rows` : 'no estimate yet'}>
              {t.rows > 0 ? compactCount(t.rows) : '—'}
            </td>
            <td className="text-right font-medium tabular-nums" title={`${formatCount(t.bytes)} bytes`}>
              {humanBytes(t.bytes)}
            </td>
          </tr>
        ))}
      </DataTable>
      <p className="text-xs text-zinc-500">
        {off ? (
          'Retention is off (LAZARUS_RETENTION_DAYS=0): no stored message is ever deleted.'
        ) : (
          <>
            Every hour, replayed and resolved messages whose status changed before{' '}
            {status.cutoff ? <AbsoluteTime iso={status.cutoff} className="text-zinc-700" /> : 'the cutoff'} are deleted, oldest first, 1,000 rows at a time. Dead and held
            messages are never deleted.
          </>
        )}
      </p>
    </div>
  )
}
