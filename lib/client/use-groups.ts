'use client'

import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { groupKeys, type QueryParams } from '@/lib/shared/query-keys'
import type { GroupDetailDto, GroupListDto } from '@/lib/shared/schemas/group'
import { apiGet, toQueryString } from './api'
import { toApiParams } from './filters'

/** Error groups for the home page; `params` are URL parameters (a relative range resolves per request). */
export function useGroups(params: QueryParams) {
  return useQuery({
    queryKey: groupKeys.list(params),
    queryFn: ({ signal }) => apiGet<GroupListDto>(`/api/groups${toQueryString(toApiParams(params))}`, { signal }),
    placeholderData: keepPreviousData,
    refetchInterval: 30_000,
  })
}

export function useGroup(id: string, range: string) {
  return useQuery({
    queryKey: groupKeys.detail(id, range),
    queryFn: ({ signal }) => apiGet<GroupDetailDto>(`/api/groups/${encodeURIComponent(id)}${toQueryString({ range })}`, { signal }),
    placeholderData: keepPreviousData,
    refetchInterval: 30_000,
  })
}
