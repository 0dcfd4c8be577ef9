'use client'

import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import type { z } from 'zod'
import { alertKeys } from '@/lib/shared/query-keys'
import type { AlertEventListDto, AlertRuleDto, AlertsOverviewDto, AlertWebhookDto, createAlertRuleSchema, createWebhookSchema } from '@/lib/shared/schemas/alert'
import { apiGet, apiSend, toQueryString } from './api'

/** The body of POST /api/alerts/rules as the request spells it (window and cool-down may be left to their defaults). */
export type CreateAlertRuleRequest = z.input<typeof createAlertRuleSchema>

/**
 * What is firing now, the rules and the webhooks. The header polls it for its banner on every page (15 s is
 * enough: rules are evaluated every LAZARUS_ALERT_INTERVAL_S, 30 s by default); the alerts page asks more often.
 */
export function useAlerts(options: { refetchIntervalMs?: number; enabled?: boolean } = {}) {
  return useQuery({
    enabled: options.enabled ?? true,
    queryKey: alertKeys.overview(),
    queryFn: ({ signal }) => apiGet<AlertsOverviewDto>('/api/alerts', { signal }),
    refetchInterval: options.refetchIntervalMs ?? 15_000,
  })
}

/** The alert history, newest first, in keyset pages. */
export function useAlertEvents() {
  return useInfiniteQuery({
    queryKey: alertKeys.events(),
    initialPageParam: null as string | null,
    queryFn: ({ signal, pageParam }) => apiGet<AlertEventListDto>(`/api/alerts/events${toQueryString({ cursor: pageParam })}`, { signal }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: 15_000,
  })
}

function useInvalidateAlerts() {
  const client = useQueryClient()
  return () => client.invalidateQueries({ queryKey: alertKeys.all })
}

export function useCreateAlertRule() {
  const invalidate = useInvalidateAlerts()
  return useMutation({
    mutationFn: (input: CreateAlertRuleRequest) => apiSend<AlertRuleDto>('POST', '/api/alerts/rules', input),
    onSuccess: () => void invalidate(),
  })
}

/** Enables or disables a rule; the switch flips at once and flips back if the API refuses. */
export function useSetAlertRuleEnabled() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: ({ id, enabled }: { id: string; enabled: boolean }) => apiSend<AlertRuleDto>('PATCH', `/api/alerts/rules/${encodeURIComponent(id)}`, { enabled }),
    onMutate: async ({ id, enabled }) => {
      await client.cancelQueries({ queryKey: alertKeys.overview() })
      const before = client.getQueryData<AlertsOverviewDto>(alertKeys.overview())
      client.setQueryData<AlertsOverviewDto>(alertKeys.overview(), (old) => (old ? { ...old, rules: old.rules.map((r) => (r.id === id ? { ...r, enabled } : r)) } : old))
      return { before }
    },
    onError: (_error, _input, context) => {
      if (context?.before) client.setQueryData(alertKeys.overview(), context.before)
    },
    onSettled: () => void client.invalidateQueries({ queryKey: alertKeys.all }),
  })
}

export function useDeleteAlertRule() {
  const invalidate = useInvalidateAlerts()
  return useMutation({
    mutationFn: (id: string) => apiSend<void>('DELETE', `/api/alerts/rules/${encodeURIComponent(id)}`),
    onSettled: () => void invalidate(),
  })
}

export function useCreateWebhook() {
  const invalidate = useInvalidateAlerts()
  return useMutation({
    mutationFn: (input: z.input<typeof createWebhookSchema>) => apiSend<AlertWebhookDto>('POST', '/api/alerts/webhooks', input),
    onSuccess: () => void invalidate(),
  })
}

export function useDeleteWebhook() {
  const invalidate = useInvalidateAlerts()
  return useMutation({
    mutationFn: (id: string) => apiSend<void>('DELETE', `/api/alerts/webhooks/${encodeURIComponent(id)}`),
    onSettled: () => void invalidate(),
  })
}
