import { listSources } from '@/lib/server/sources/list-sources'
import { formatTime } from '@/components/ui/time-ago'

export const dynamic = 'force-dynamic'

export default async function SourcesPage() {
  const { sources, brokerError } = await listSources()
  return (
    <section>
      <h1 className="mb-3 text-base font-semibold">Sources</h1>
      {brokerError && <p className="mb-2 text-amber-700">{brokerError}</p>}
      <table className="w-full border-collapse bg-white text-left">
        <thead className="border-b border-zinc-200 text-zinc-500">
          <tr>
            <th className="px-2 py-1 font-medium">Queue</th>
            <th className="px-2 py-1 text-right font-medium">Drained</th>
            <th className="px-2 py-1 text-right font-medium">Depth</th>
            <th className="px-2 py-1 font-medium">Last drain</th>
            <th className="px-2 py-1 font-medium">State</th>
          </tr>
        </thead>
        <tbody>
          {sources.map((s) => (
            <tr key={s.id} className="border-b border-zinc-100">
              <td className="px-2 py-1 font-mono">{s.vhost === '/' ? '' : `${s.vhost}/`}{s.queue}</td>
              <td className="px-2 py-1 text-right tabular-nums">{s.drained}</td>
              <td className="px-2 py-1 text-right tabular-nums">{s.depth ?? '—'}</td>
              <td className="px-2 py-1 tabular-nums">{formatTime(s.lastDrainAt)}</td>
              <td className="px-2 py-1">{s.error ? <span className="text-red-700">{s.error}</span> : s.enabled ? 'draining' : 'disabled'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {sources.length === 0 && <p className="p-6 text-zinc-500">No sources. Set LAZARUS_SOURCES or POST /api/sources.</p>}
    </section>
  )
}
