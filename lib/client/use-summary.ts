'use client'

import { useQuery } from '@tanstack/react-query'
import { summaryKeys } from '@/lib/shared/query-keys'
import { apiGet } from './api'
import type { SummaryResponse } from './types'

/** The home page's strip: totals, inflow and live broker depth, so it refreshes like the sources page. */
export function useSummary() {
  return useQuery({
    queryKey: summaryKeys.all,
    queryFn: ({ signal }) => apiGet<SummaryResponse>('/api/summary', { signal }),
    refetchInterval: 10_000,
  })
}
