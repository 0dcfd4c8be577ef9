'use client'

import { keepPreviousData, useInfiniteQuery, useQuery } from '@tanstack/react-query'
import { messageKeys, type QueryParams } from '@/lib/shared/query-keys'
import type { MessageCountDto, MessageDetailDto, MessageListDto } from '@/lib/shared/schemas/message'
import { apiGet, toQueryString } from './api'
import { toApiParams } from './filters'

/** Keyset pages of the message list; each "Load more" asks for the page after the last cursor. */
export function useMessages(params: QueryParams) {
  return useInfiniteQuery({
    queryKey: messageKeys.list(params),
    initialPageParam: null as string | null,
    queryFn: ({ signal, pageParam }) =>
      apiGet<MessageListDto>(`/api/messages${toQueryString({ ...toApiParams(params), cursor: pageParam })}`, { signal }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    placeholderData: keepPreviousData,
  })
}

/**
 * "N matching" for a filter; the API may estimate broad filters (docs/ARCHITECTURE.md#counters-instead-of-counting).
 */
export function useMessageCount(params: QueryParams, options: { enabled?: boolean } = {}) {
  const { limit: _limit, ...filter } = params
  return useQuery({
    queryKey: messageKeys.count(filter),
    queryFn: ({ signal }) => apiGet<MessageCountDto>(`/api/messages/count${toQueryString(toApiParams(filter))}`, { signal }),
    enabled: options.enabled ?? true,
    retry: false,
  })
}

export function useMessage(id: string) {
  return useQuery({
    queryKey: messageKeys.detail(id),
    queryFn: ({ signal }) => apiGet<MessageDetailDto>(`/api/messages/${encodeURIComponent(id)}`, { signal }),
  })
}
