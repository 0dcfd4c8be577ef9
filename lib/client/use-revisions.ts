'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { messageKeys } from '@/lib/shared/query-keys'
import type { BulkEditOperation, BulkEditResultDto, CreateRevisionInput, MessageRevisionsDto, RevisionCreatedDto } from '@/lib/shared/schemas/revision'
import { apiGet, apiSend } from './api'
import type { SelectionInput } from './use-replays'

export function useRevisions(id: string, options: { enabled?: boolean } = {}) {
  return useQuery({
    queryKey: messageKeys.revisions(id),
    queryFn: ({ signal }) => apiGet<MessageRevisionsDto>(`/api/messages/${encodeURIComponent(id)}/revisions`, { signal }),
    enabled: options.enabled ?? true,
  })
}

export function useCreateRevision(id: string) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: CreateRevisionInput) => apiSend<RevisionCreatedDto>('POST', `/api/messages/${encodeURIComponent(id)}/revisions`, input),
    onSuccess: () => client.invalidateQueries({ queryKey: messageKeys.all }),
  })
}

export function useBulkEdit() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: { selection: SelectionInput; operation: BulkEditOperation; preview: boolean }) => apiSend<BulkEditResultDto>('POST', '/api/messages/bulk-edit', input),
    onSuccess: (result) => {
      if (!result.preview) void client.invalidateQueries({ queryKey: messageKeys.all })
    },
  })
}
