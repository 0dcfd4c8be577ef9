'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { auditKeys, groupKeys, messageKeys, settingsKeys } from '@/lib/shared/query-keys'
import type { GroupTracesDto, TraceSettingsDto, UpdateTraceSettingsInput } from '@/lib/shared/schemas/trace-settings'
import { apiGet, apiSend } from './api'

/** A group's most recent distinct traces (GET /api/groups/{id}/traces). */
export function useGroupTraces(id: string) {
  return useQuery({
    queryKey: groupKeys.traces(id),
    queryFn: ({ signal }) => apiGet<GroupTracesDto>(`/api/groups/${encodeURIComponent(id)}/traces`, { signal }),
    refetchInterval: 30_000,
  })
}

const TRACE_SETTINGS = '/api/settings/traces'

/** The "Open trace" link template (GET /api/settings/traces, admins). */
export function useTraceSettings() {
  return useQuery({ queryKey: settingsKeys.traces(), queryFn: ({ signal }) => apiGet<TraceSettingsDto>(TRACE_SETTINGS, { signal }) })
}

/** PUT /api/settings/traces (admins); messages and groups shown afterwards link with the new template. */
export function useSaveTraceSettings() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: UpdateTraceSettingsInput) => apiSend<TraceSettingsDto>('PUT', TRACE_SETTINGS, input),
    onSuccess: (data) => {
      client.setQueryData(settingsKeys.traces(), data)
      void client.invalidateQueries({ queryKey: messageKeys.all })
      void client.invalidateQueries({ queryKey: groupKeys.all })
      void client.invalidateQueries({ queryKey: auditKeys.all })
    },
  })
}
