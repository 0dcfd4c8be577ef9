'use client'

import { keepPreviousData, useInfiniteQuery } from '@tanstack/react-query'
import { auditKeys, type QueryParams } from '@/lib/shared/query-keys'
import type { AuditListDto } from '@/lib/shared/schemas/audit'
import { apiGet, toQueryString } from './api'

/** The audit log, newest first, in keyset pages; `params` are the API's filters (action, subjectType, subjectId). */
export function useAudit(params: QueryParams) {
  return useInfiniteQuery({
    queryKey: auditKeys.list(params),
    initialPageParam: null as string | null,
    queryFn: ({ signal, pageParam }) => apiGet<AuditListDto>(`/api/audit${toQueryString({ ...params, cursor: pageParam })}`, { signal }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  })
}
