'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { sourceKeys, summaryKeys } from '@/lib/shared/query-keys'
import type { CreateSourceInput, JetStreamFactsDto, SourceDto, SourceListDto, UpdateSourceInput } from '@/lib/shared/schemas/source'
import { apiGet, apiSend } from './api'
import { visibleText } from './format'

/** Sources with live broker depth: polled, because depth changes without Lazarus doing anything. */
export function useSources() {
  return useQuery({
    queryKey: sourceKeys.list(),
    queryFn: ({ signal }) => apiGet<SourceListDto>('/api/sources', { signal }),
    refetchInterval: 5_000,
  })
}

/**
 * The NATS server's facts about the JetStream sources (where their advisories are kept, how many wait for capture):
 * asked only when there are such sources, and less often than the depths, since each answer opens a NATS connection.
 */
export function useJetStreamFacts({ enabled }: { enabled: boolean }) {
  return useQuery({
    queryKey: sourceKeys.jetstream(),
    queryFn: ({ signal }) => apiGet<JetStreamFactsDto>('/api/sources/jetstream', { signal }),
    refetchInterval: 10_000,
    enabled,
  })
}

/**
 * The sources a person points an action at (a pause, an alert rule): the DLQs, not the hold queue, whose messages
 * are already the guards' own; labelled `vhost/queue` outside the default vhost.
 */
export function useSourceOptions(): { options: { value: string; label: string }[]; isPending: boolean } {
  const { data, isPending } = useSources()
  const options = (data?.sources ?? []).filter((s) => s.kind !== 'hold').map((s) => ({ value: s.id, label: visibleText(s.vhost === '/' ? s.queue : `${s.vhost}/${s.queue}`) }))
  return { options, isPending }
}

export function useCreateSource() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: Partial<CreateSourceInput>) => apiSend<SourceDto>('POST', '/api/sources', input),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: sourceKeys.all })
      void client.invalidateQueries({ queryKey: summaryKeys.all })
    },
  })
}

export function useUpdateSource(id: string) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: UpdateSourceInput) => apiSend<SourceDto>('PATCH', `/api/sources/${encodeURIComponent(id)}`, input),
    onSuccess: (updated) => {
      client.setQueryData<SourceListDto>(sourceKeys.list(), (old) =>
        old ? { ...old, sources: old.sources.map((s) => (s.id === updated.id ? { ...s, ...updated, depth: s.depth, consumers: s.consumers } : s)) } : old,
      )
      void client.invalidateQueries({ queryKey: sourceKeys.all })
    },
  })
}

/** DELETE /api/sources/{id}: only a source that stores no dead letters (409 otherwise: disable it instead). */
export function useDeleteSource() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (id: string) => apiSend<{ id: string; deleted: true }>('DELETE', `/api/sources/${encodeURIComponent(id)}`),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: sourceKeys.all })
      void client.invalidateQueries({ queryKey: summaryKeys.all })
    },
  })
}
