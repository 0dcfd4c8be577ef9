import Link from 'next/link'
import { listMessages } from '@/lib/server/messages/list-messages'
import { listMessagesQuerySchema } from '@/lib/shared/schemas/message'
import { formatTime } from '@/components/ui/time-ago'

export const dynamic = 'force-dynamic'

export default async function MessagesPage({ searchParams }: { searchParams: Promise<Record<string, string>> }) {
  const parsed = listMessagesQuerySchema.safeParse(await searchParams)
  if (!parsed.success) return <p className="text-red-700">Invalid filter: {parsed.error.issues.map((i) => i.message).join('; ')}</p>
  const { messages, nextCursor } = await listMessages(parsed.data)
  const params = new URLSearchParams(Object.entries(await searchParams))
  if (nextCursor) params.set('cursor', nextCursor)
  return (
    <section>
      <h1 className="mb-3 text-base font-semibold">Messages</h1>
      <table className="w-full table-fixed border-collapse bg-white text-left">
        <thead className="border-b border-zinc-200 text-zinc-500">
          <tr>
            <th className="w-44 px-2 py-1 font-medium">Failed at</th>
            <th className="w-40 px-2 py-1 font-medium">Source</th>
            <th className="px-2 py-1 font-medium">Error</th>
            <th className="w-28 px-2 py-1 font-medium">Kind</th>
            <th className="w-40 px-2 py-1 font-medium">Entity</th>
          </tr>
        </thead>
        <tbody>
          {messages.map((m) => (
            <tr key={m.id} className="border-b border-zinc-100 hover:bg-zinc-50">
              <td className="px-2 py-1 tabular-nums">
                <Link href={`/messages/${m.id}`} className="hover:underline">{formatTime(m.failedAt)}</Link>
              </td>
              <td className="truncate px-2 py-1">{m.source.queue}</td>
              <td className="truncate px-2 py-1 font-mono">{[m.errorType, m.errorMessage].filter(Boolean).join(': ') || m.deathReason}</td>
              <td className="px-2 py-1">{m.failureKind}</td>
              <td className="truncate px-2 py-1 font-mono">{m.entityKey ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {messages.length === 0 && <p className="p-6 text-zinc-500">No messages match.</p>}
      {nextCursor && <Link className="mt-2 inline-block text-brand underline" href={`/messages?${params}`}>Next page</Link>}
    </section>
  )
}
