'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { auditKeys, pauseKeys, replayKeys } from '@/lib/shared/query-keys'
import type { CreatePauseInput, GuardStatusListDto, PauseDto, PauseListDto } from '@/lib/shared/schemas/pause'
import { apiGet, apiSend, toQueryString } from './api'

/** The pause registry; polled, since replays pause and resume entities on their own. */
export function usePauses(status: 'active' | 'all' = 'active') {
  return useQuery({
    queryKey: pauseKeys.list(status),
    queryFn: ({ signal }) => apiGet<PauseListDto>(`/api/pauses${toQueryString({ status: status === 'active' ? null : status })}`, { signal }),
    // A pause being released changes within seconds; a calm registry only needs an occasional look.
    refetchInterval: (query) => (query.state.data?.pauses.some((p) => p.status === 'releasing') ? 1_000 : 5_000),
  })
}

/**
 * Guards listening (and up to date) on a source's consumer queue: `queue`, or where most of its messages failed; every
 * source's without a sourceId. Polled like the list: guards come and go on their own.
 */
export function useGuardStatus({ sourceId = null, queue = null, enabled = true }: { sourceId?: string | null; queue?: string | null; enabled?: boolean } = {}) {
  return useQuery({
    queryKey: pauseKeys.guards(sourceId, queue),
    queryFn: ({ signal }) => apiGet<GuardStatusListDto>(`/api/pauses/guards${toQueryString({ sourceId, queue })}`, { signal }),
    enabled,
    refetchInterval: 10_000,
  })
}

export function useCreatePause() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: CreatePauseInput) => apiSend<PauseDto>('POST', '/api/pauses', input),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: pauseKeys.all })
      void client.invalidateQueries({ queryKey: auditKeys.all })
    },
  })
}

/** Resume = DELETE: the pause's held messages are released in arrival order, then guards stop holding. */
export function useResumePause() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (id: string) => apiSend<PauseDto>('DELETE', `/api/pauses/${encodeURIComponent(id)}`),
    onSettled: () => {
      void client.invalidateQueries({ queryKey: pauseKeys.all })
      void client.invalidateQueries({ queryKey: replayKeys.lists() })
      void client.invalidateQueries({ queryKey: auditKeys.all })
    },
  })
}
