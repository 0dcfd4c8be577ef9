'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { auditKeys, topologyKeys } from '@/lib/shared/query-keys'
import type { FindingDto, TopologyDto } from '@/lib/shared/schemas/topology'
import type { BuilderPlanDto, TopologyApplyDto } from '@/lib/shared/topology/builder-api'
import type { ThreeTierSpecInput } from '@/lib/shared/topology/three-tier'
import { apiGet, apiSend, toQueryString } from './api'

/**
 * One vhost's graph, effective settings and findings (GET /api/topology); a source's part of it with `source`.
 * The worker re-runs the doctor every minute (docs/topology.md), so a calm poll keeps the page current.
 */
export function useTopology({ vhost = null, source = null }: { vhost?: string | null; source?: string | null } = {}) {
  return useQuery({
    queryKey: topologyKeys.graph(vhost, source),
    queryFn: ({ signal }) => apiGet<TopologyDto>(`/api/topology${toQueryString({ vhost, source })}`, { signal }),
    refetchInterval: 30_000,
    placeholderData: (previous) => previous,
  })
}

/**
 * The findings of a vhost on their own (GET /api/topology/findings), or with `broker: 'jetstream'` the NATS server's;
 * `all` keeps the resolved ones.
 */
export function useTopologyFindings({
  vhost = null,
  broker = null,
  state = 'open',
  enabled = true,
}: { vhost?: string | null; broker?: 'jetstream' | null; state?: 'open' | 'all'; enabled?: boolean } = {}) {
  return useQuery({
    enabled,
    queryKey: topologyKeys.findings(vhost, state, broker),
    queryFn: ({ signal }) => apiGet<{ findings: FindingDto[] }>(`/api/topology/findings${toQueryString({ vhost: broker ? null : vhost, broker, state })}`, { signal }),
  })
}

/** Run the doctor now (POST /api/topology/runs); its answer is the fresh graph, put straight into the cache. */
export function useRunTopology({ vhost = null, source = null }: { vhost?: string | null; source?: string | null } = {}) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: () => apiSend<TopologyDto>('POST', '/api/topology/runs', vhost ? { vhost } : {}),
    onSuccess: (dto) => {
      // The per-source view is a part of the graph the run's answer does not carry: refetch it instead.
      if (!source) client.setQueryData(topologyKeys.graph(vhost, null), dto)
      void client.invalidateQueries({ queryKey: topologyKeys.all })
    },
  })
}

/** Acknowledge a finding with a reason (audited); it stays listed, marked, until a run no longer raises it. */
export function useAcknowledgeFinding() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: ({ id, reason }: { id: string; reason: string }) => apiSend<FindingDto>('POST', `/api/topology/findings/${encodeURIComponent(id)}/acknowledge`, { reason }),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: topologyKeys.all })
      void client.invalidateQueries({ queryKey: auditKeys.all })
    },
  })
}

/** What the builder's routes take: the spec as the form has it (defaults filled in by the server). */
type BuilderRequest = { vhost: string; spec: ThreeTierSpecInput }

/** The builder's dry run (POST /api/topology/builder/plan): every object with create / unchanged / conflict. */
export function useBuilderPlan() {
  return useMutation({
    mutationFn: (input: BuilderRequest) => apiSend<BuilderPlanDto>('POST', '/api/topology/builder/plan', input),
  })
}

/** Declares what the dry run would create (admin; audited). The doctor's graph changes with it. */
export function useApplyTopology() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: BuilderRequest) => apiSend<TopologyApplyDto>('POST', '/api/topology/builder/apply', { ...input, confirm: true }),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: topologyKeys.all })
      void client.invalidateQueries({ queryKey: auditKeys.all })
    },
  })
}
