import { z } from 'zod'
import { text } from '../schemas/fields'
import type { VhostDefinitions } from './definitions'
import { threeTierSpecSchema, type BuilderObject, type ConsumerRule } from './three-tier'

/** The builder's HTTP API (docs/topology-builder.md#the-dry-run, #applying-it): POST /api/topology/builder/plan and …/apply. */

// POST /api/topology/builder/plan: the declarations and the dry run against the vhost (default: the broker URL's)
export const planTopologySchema = z.object({ vhost: text().min(1).max(255).optional(), spec: threeTierSpecSchema }).strict()

// POST /api/topology/builder/apply: declares what the dry run would create; `confirm` says the admin saw the plan
export const applyTopologySchema = z
  .object({
    vhost: text().min(1).max(255).optional(),
    spec: threeTierSpecSchema,
    confirm: z.literal(true, { error: 'confirm must be true: apply declares objects on the broker' }),
  })
  .strict()

/**
 * create: not there, apply declares it; unchanged: there with the same settings; conflict: a queue or exchange of that
 * name with other settings, which the broker would refuse to redeclare (PRECONDITION_FAILED). Bindings are never in
 * conflict: a binding is there or not.
 */
export const PLAN_ACTIONS = ['create', 'unchanged', 'conflict'] as const
export type PlanAction = (typeof PLAN_ACTIONS)[number]

/** A setting of an existing object that differs from the builder's (`arguments.x-overflow`, `type`, `durable`, …). */
export type PlanDifference = { field: string; existing: unknown; wanted: unknown }

export type PlanItemDto = { object: BuilderObject; action: PlanAction; differences: PlanDifference[] }

export type TopologyPlanDto = {
  vhost: string
  /** The broker's version the objects were built for (the DLQ's delivery limit differs on 4.x). */
  brokerVersion: string
  items: PlanItemDto[]
  counts: Record<PlanAction, number>
  /** No conflict: apply would declare every `create` item. */
  canApply: boolean
}

/** POST /api/topology/builder/plan */
export type BuilderPlanDto = {
  definitions: VhostDefinitions
  commands: string[]
  consumerRule: ConsumerRule
  plan: TopologyPlanDto
}

/** POST /api/topology/builder/apply */
export type TopologyApplyDto = { vhost: string; created: BuilderObject[]; unchanged: number; auditId: string }
