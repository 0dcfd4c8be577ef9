'use client'

import { useQuery } from '@tanstack/react-query'
import { settingsKeys } from '@/lib/shared/query-keys'
import type { RetentionStatusDto } from '@/lib/shared/schemas/retention'
import { apiGet } from './api'

/** The retention period, the store's size and what retention removes next (GET /api/settings/retention). */
export function useRetentionStatus() {
  return useQuery({
    queryKey: settingsKeys.retention(),
    queryFn: ({ signal }) => apiGet<RetentionStatusDto>('/api/settings/retention', { signal }),
    // Sizes move slowly and the query counts rows: a minute between looks is plenty.
    refetchInterval: 60_000,
  })
}
