'use client'

import { useMutation, useQueryClient } from '@tanstack/react-query'
import { auditKeys, groupKeys } from '@/lib/shared/query-keys'
import type { GroupDetailDto, GroupDto, UpdateGroupInput } from '@/lib/shared/schemas/group'
import { apiSend } from './api'

/**
 * Saves a group's triage state (PATCH /api/groups/{id}: status, note, ticket link; null clears). The group's
 * detail pages (every chart range) take the answer at once; the lists refetch, since a status filter may now
 * include or exclude it.
 */
export function useUpdateGroupTriage(id: string) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: UpdateGroupInput) => apiSend<GroupDto>('PATCH', `/api/groups/${encodeURIComponent(id)}`, input),
    onSuccess: (updated) => {
      client.setQueriesData<GroupDetailDto>({ queryKey: [...groupKeys.details(), id] }, (old) =>
        old ? { ...old, group: { ...old.group, status: updated.status, note: updated.note, ticketUrl: updated.ticketUrl } } : old,
      )
      void client.invalidateQueries({ queryKey: groupKeys.lists() })
      void client.invalidateQueries({ queryKey: auditKeys.all })
    },
  })
}
