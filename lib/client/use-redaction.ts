'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import type { z } from 'zod'
import { settingsKeys } from '@/lib/shared/query-keys'
import type { RedactionPreviewDto, RedactionSettingsDto, redactionPreviewSchema, updateRedactionSchema } from '@/lib/shared/schemas/redaction'
import { apiGet, apiSend } from './api'

export function useRedactionSettings() {
  return useQuery({
    queryKey: settingsKeys.redaction(),
    queryFn: ({ signal }) => apiGet<RedactionSettingsDto>('/api/settings/redaction', { signal }),
  })
}

export function useSaveRedactionRules() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: z.input<typeof updateRedactionSchema>) => apiSend<RedactionSettingsDto>('PUT', '/api/settings/redaction', input),
    onSuccess: (settings) => client.setQueryData(settingsKeys.redaction(), settings),
  })
}

/** What the given (unsaved) rules make of a sample; a mutation, since every keystroke is a new question. */
export function useRedactionPreview() {
  return useMutation({
    mutationFn: (input: z.input<typeof redactionPreviewSchema>) => apiSend<RedactionPreviewDto>('POST', '/api/settings/redaction/preview', input),
  })
}
