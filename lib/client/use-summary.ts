'use client'

import { useQuery } from '@tanstack/react-query'
import { summaryKeys } from '@/lib/shared/query-keys'
import type { SummaryDto } from '@/lib/shared/schemas/summary'
import { apiGet } from './api'

/** The home page's strip: totals, inflow and live broker depth, so it refreshes like the sources page. */
export function useSummary() {
  return useQuery({
    queryKey: summaryKeys.all,
    queryFn: ({ signal }) => apiGet<SummaryDto>('/api/summary', { signal }),
    refetchInterval: 10_000,
  })
}
