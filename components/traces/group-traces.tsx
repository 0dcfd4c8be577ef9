'use client'

import Link from 'next/link'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { Panel } from '@/components/ui/panel'
import { RelativeTime } from '@/components/ui/time'
import { formatCount } from '@/lib/client/format'
import { useGroupTraces } from '@/lib/client/use-traces'
import { OpenTraceLink } from './trace-link'

const COLUMNS: DataColumn[] = [{ header: 'Trace' }, { header: 'Failed', width: 'w-28' }, { header: 'Message', width: 'w-28' }, { width: 'w-32' }]

/**
 * A group's most recent distinct traces: where to look in the tracing tool for what led to these failures. Shown only
 * when some of the group's newest messages carry a trace; a group without any keeps its page as it was.
 */
export function GroupTraces({ id }: { id: string }) {
  const { data, error } = useGroupTraces(id)
  if (error) return <p className="text-xs text-red-700">Could not load this group&apos;s recent traces.</p>
  if (!data || data.traces.length === 0) return null
  return (
    <Panel title="Recent traces" actions={<span className="text-xs text-zinc-400">among the last {formatCount(data.scanned)} messages</span>} bodyClassName="p-0">
      <DataTable label="Recent traces" columns={COLUMNS}>
        {data.traces.map((trace) => (
          <tr key={trace.traceId} data-testid="group-trace">
            <td className="truncate font-mono">
              <Link href={`/messages?traceId=${encodeURIComponent(trace.traceId)}`} className="hover:underline" title="Every message of this trace">
                {trace.traceId}
              </Link>
            </td>
            <td>
              <RelativeTime iso={trace.failedAt} />
            </td>
            <td>
              <Link href={`/messages/${trace.messageId}`} className="font-mono hover:underline">
                #{trace.messageId}
              </Link>
            </td>
            <td className="text-right">
              <OpenTraceLink url={trace.url} className="whitespace-nowrap text-brand hover:underline" />
            </td>
          </tr>
        ))}
      </DataTable>
    </Panel>
  )
}
