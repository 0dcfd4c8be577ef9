'use client'

import Link from 'next/link'
import { toQueryString } from '@/lib/client/api'
import { useCan } from '@/lib/client/use-session'

/** Looks like the default Button (components/ui/button.tsx): it is an action, reached by navigation. */
const LOOK =
  'inline-flex h-7 shrink-0 items-center rounded-md border border-zinc-300 bg-white px-2.5 font-medium whitespace-nowrap text-zinc-800 hover:bg-zinc-50 focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-brand'

/**
 * "Pause this entity": opens the pause form on the pauses page prefilled with the source, the consumer queue and the
 * entity key (or, with `group`, the entities an error group touches). Only for people allowed to pause.
 */
export function PauseLink({ label, sourceId, queue, entityKey, groupId }: { label: string; sourceId?: string; queue?: string | null; entityKey?: string; groupId?: string }) {
  const canPause = useCan('pauses:write')
  if (!canPause) return null
  const query = groupId ? { group: groupId } : { source: sourceId, queue, entity: entityKey }
  return (
    <Link href={`/pauses${toQueryString(query)}`} className={LOOK} title="Guards hold this entity's new messages until it is resumed">
      {label}
    </Link>
  )
}
