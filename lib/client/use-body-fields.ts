'use client'

import { useQuery } from '@tanstack/react-query'
import { messageKeys, type QueryParams } from '@/lib/shared/query-keys'
import type { BodyFieldsDto } from '@/lib/shared/schemas/body-fields'
import { apiGet, toQueryString } from './api'

/** The JSON Pointers of recent JSON bodies (`group`, `source` or neither), fetched once the body field form asks. */
export function useBodyFields(params: QueryParams, options: { enabled: boolean }) {
  return useQuery({
    queryKey: messageKeys.bodyFields(params),
    queryFn: ({ signal }) => apiGet<BodyFieldsDto>(`/api/messages/body-fields${toQueryString(params)}`, { signal }),
    enabled: options.enabled,
    staleTime: 60_000,
    retry: false,
  })
}
