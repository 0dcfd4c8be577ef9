import Link from 'next/link'
import { KindBadge } from '@/components/ui/badge'
import { RelativeTime } from '@/components/ui/time'
import { visibleText } from '@/lib/client/format'
import type { MessageSummaryDto } from '@/lib/shared/schemas/message'
import { errorSummary } from './messages-table'

/** A few neighbours of a message: one line each, linking to their detail. */
export function RelatedMessages({ messages, empty, moreHref }: { messages: MessageSummaryDto[]; empty: string; moreHref?: string }) {
  if (messages.length === 0) return <p className="text-zinc-500">{empty}</p>
  return (
    <>
      <ul className="divide-y divide-zinc-100">
        {messages.map((m) => {
          const { type, message } = errorSummary(m)
          const text = [type, message].filter(Boolean).join(': ')
          return (
            <li key={m.id} className="flex h-8 min-w-0 items-center gap-2">
              <RelativeTime iso={m.failedAt} className="w-16 shrink-0 text-xs text-zinc-500 tabular-nums" />
              <Link href={`/messages/${m.id}`} className="min-w-0 flex-1 truncate font-mono text-xs text-zinc-800 hover:underline" title={text}>
                {text}
              </Link>
              {m.entityKey && <span className="max-w-32 shrink-0 truncate font-mono text-xs text-zinc-500" title={visibleText(m.entityKey)}>{visibleText(m.entityKey)}</span>}
              <KindBadge kind={m.failureKind} />
            </li>
          )
        })}
      </ul>
      {moreHref && (
        <Link href={moreHref} className="mt-2 inline-block text-xs text-brand hover:underline">
          All of them →
        </Link>
      )}
    </>
  )
}
