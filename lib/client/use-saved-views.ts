'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { viewKeys } from '@/lib/shared/query-keys'
import type { SavedViewDto, SavedViewListDto, SaveViewInput } from '@/lib/shared/schemas/saved-view'
import { apiGet, apiSend } from './api'

/** The signed-in user's saved message-list views. */
export function useSavedViews() {
  return useQuery({ queryKey: viewKeys.all, queryFn: ({ signal }) => apiGet<SavedViewListDto>('/api/views', { signal }) })
}

export function useSaveView() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: SaveViewInput) => apiSend<SavedViewDto>('POST', '/api/views', input),
    onSuccess: () => void client.invalidateQueries({ queryKey: viewKeys.all }),
  })
}

export function useDeleteView() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (id: string) => apiSend<{ deleted: true }>('DELETE', `/api/views/${encodeURIComponent(id)}`),
    onSettled: () => void client.invalidateQueries({ queryKey: viewKeys.all }),
  })
}
