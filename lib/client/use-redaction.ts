'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import type { RedactionPreviewDto, RedactionRuleInput, RedactionSettingsDto } from '@/lib/shared/schemas/redaction'
import { apiGet, apiSend } from './api'
import { MESSAGE_FILTER_KEYS, toApiParams } from './filters'

/** Query keys of the settings page (kept here: only these hooks use them). */
export const redactionKeys = {
  all: ['settings', 'redaction'] as const,
}

export function useRedactionSettings() {
  return useQuery({
    queryKey: redactionKeys.all,
    queryFn: ({ signal }) => apiGet<RedactionSettingsDto>('/api/settings/redaction', { signal }),
  })
}

export function useSaveRedactionRules() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (rules: RedactionRuleInput[]) => apiSend<RedactionSettingsDto>('PUT', '/api/settings/redaction', { rules }),
    onSuccess: (settings) => client.setQueryData(redactionKeys.all, settings),
  })
}

/** What the given (unsaved) rules make of a sample; a mutation, since every keystroke is a new question. */
export function useRedactionPreview() {
  return useMutation({
    mutationFn: (input: { sample: string; rules: RedactionRuleInput[] }) => apiSend<RedactionPreviewDto>('POST', '/api/settings/redaction/preview', input),
  })
}

export type ExportSelection = { ids: readonly string[] } | { groupId: string } | { filter: Record<string, string | undefined> }

/**
 * The download URL of GET /api/export for a selection: explicit ids, a whole group, or the message-list filters as
 * they sit in the page URL (a relative `range` becomes an absolute `from` now; paging and sorting are dropped).
 */
export function exportUrl(format: 'jsonl' | 'csv' | 'md', selection: ExportSelection): string {
  const params = new URLSearchParams({ format })
  if ('ids' in selection) params.set('ids', selection.ids.join(','))
  else if ('groupId' in selection) params.set('group', selection.groupId)
  else {
    const filter = toApiParams(Object.fromEntries(MESSAGE_FILTER_KEYS.map((k) => [k, selection.filter[k]])))
    for (const [key, value] of Object.entries(filter)) if (value) params.set(key, value)
  }
  return `/api/export?${params}`
}
