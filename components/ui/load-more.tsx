import { plural } from '@/lib/client/format'
import { Button } from './button'
import { InlineError } from './states'

/** What LoadMore reads of a TanStack infinite query. */
export type KeysetPages = {
  hasNextPage: boolean
  isFetchingNextPage: boolean
  fetchNextPage: () => Promise<unknown>
  error: unknown
}

/**
 * The footer of a list read in keyset pages: "Load more" while there is a next page, how many rows are loaded, and
 * why a page failed (a failure with nothing loaded is the list's own error state, not this footer's).
 */
export function LoadMore({ pages, loaded, one, many }: { pages: KeysetPages; loaded: number; one: string; many?: string }) {
  const failed = Boolean(pages.error) && loaded > 0
  if (!pages.hasNextPage && !pages.isFetchingNextPage && !failed) return null
  return (
    <div className="flex h-11 items-center justify-center gap-3 border-t border-zinc-100">
      {failed && <InlineError error={pages.error} />}
      <Button onClick={() => void pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
        {pages.isFetchingNextPage ? 'Loading…' : 'Load more'}
      </Button>
      <span className="text-xs text-zinc-500 tabular-nums">{plural(loaded, one, many)} loaded</span>
    </div>
  )
}
