import 'server-only'
import type { BuilderPlanDto } from '@/lib/shared/topology/builder-api'
import { buildThreeTier, type ThreeTierSpecInput } from '@/lib/shared/topology/three-tier'
import { planTopologyApply } from './plan-topology-apply'

export type BuildTopologyPlanOptions = { vhost: string; spec: ThreeTierSpecInput }

/** POST /api/topology/builder/plan: the builder's output for `spec`, with the dry run against `vhost`. */
export async function buildTopologyPlan({ vhost, spec }: BuildTopologyPlanOptions): Promise<BuilderPlanDto> {
  const plan = await planTopologyApply({ vhost, spec })
  const { definitions, commands, consumerRule } = buildThreeTier(spec, { vhost, brokerVersion: plan.brokerVersion })
  return { definitions, commands, consumerRule, plan }
}
