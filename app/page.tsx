import Link from 'next/link'
import { listGroups } from '@/lib/server/groups/list-groups'
import { formatTime } from '@/components/ui/time-ago'

export const dynamic = 'force-dynamic'

export default async function GroupsPage() {
  const { groups } = await listGroups({ sort: 'lastSeen', limit: 200 })
  return (
    <section>
      <h1 className="mb-3 text-base font-semibold">Error groups</h1>
      {groups.length === 0 ? (
        <p className="rounded border border-dashed border-zinc-300 bg-white p-6 text-zinc-500">
          No dead letters stored yet. Add a terminal DLQ on the <Link className="text-brand underline" href="/sources">Sources</Link> page, or run <code>npm run demo:seed</code>.
        </p>
      ) : (
        <table className="w-full table-fixed border-collapse bg-white text-left">
          <thead className="border-b border-zinc-200 text-zinc-500">
            <tr>
              <th className="w-[45%] px-2 py-1 font-medium">Error</th>
              <th className="px-2 py-1 text-right font-medium">Count</th>
              <th className="px-2 py-1 text-right font-medium">/min (5m)</th>
              <th className="px-2 py-1 font-medium">Last seen</th>
              <th className="px-2 py-1 font-medium">Sources</th>
              <th className="px-2 py-1 font-medium">Kinds</th>
            </tr>
          </thead>
          <tbody>
            {groups.map((g) => (
              <tr key={g.id} className="border-b border-zinc-100 hover:bg-zinc-50">
                <td className="truncate px-2 py-1">
                  <Link href={`/messages?group=${g.id}`} className="font-mono text-zinc-900 hover:underline" title={g.title}>
                    {g.title}
                  </Link>
                </td>
                <td className="px-2 py-1 text-right tabular-nums">{g.count}</td>
                <td className="px-2 py-1 text-right tabular-nums">{g.ratePerMinute.last5}</td>
                <td className="px-2 py-1 tabular-nums">{formatTime(g.lastSeen)}</td>
                <td className="truncate px-2 py-1">{g.sources.join(', ')}</td>
                <td className="truncate px-2 py-1">{g.failureKinds.join(', ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
