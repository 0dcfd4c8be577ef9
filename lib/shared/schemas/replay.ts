import { z } from 'zod'
import { text } from './fields'
import { selectionSchema, type Selection } from './selection'
import { replayTargetSchema } from './source'

export { replayTargetSchema }
export type ReplayTarget = z.infer<typeof replayTargetSchema>

/**
 * 'awaiting_approval' and 'scheduled' jobs have not started: they hold only their items (docs/ARCHITECTURE.md#job-lifecycle).
 * 'rejected' and 'expired' end a job that never started.
 */
export const REPLAY_JOB_STATUSES = ['awaiting_approval', 'scheduled', 'pending', 'running', 'completed', 'cancelled', 'failed', 'rejected', 'expired'] as const
/** How far ahead a replay may be scheduled. */
export const MAX_SCHEDULE_AHEAD_MS = 30 * 24 * 3600 * 1000
export const REPLAY_ITEM_STATUSES = ['pending', 'in_flight', 'confirmed', 'unroutable', 'failed', 'skipped', 'cancelled'] as const

// POST /api/replays
export const createReplaySchema = z
  .object({
    selection: selectionSchema,
    target: replayTargetSchema.optional(),
    ratePerSecond: z.number().int().min(1).max(50_000).optional(),
    /** Default: true when any selected message comes from an order-sensitive source. */
    pauseEntities: z.boolean().optional(),
    /** Required to replay to a source exchange that routes the key to more queues than the failed one. */
    allowFanOut: z.boolean().optional(),
    dryRun: z.boolean().optional(),
    /**
     * The number of messages the caller confirms will be published (the plan's `replayable`). Required when the plan
     * asks for it (`confirmCount` not null: a large replay, from the admin's threshold); when sent, a different number
     * is refused (422), so a job never publishes more than was confirmed. Dry runs ignore it.
     */
    confirmCount: z.number().int().min(0).max(100_000_000).optional(),
    /** Start at this time (ISO 8601, in the future, at most 30 days ahead): the job is 'scheduled' until then. */
    startAt: z.iso
      .datetime({ offset: true })
      .refine((v) => Date.parse(v) > Date.now(), 'startAt must be in the future')
      .refine((v) => Date.parse(v) <= Date.now() + MAX_SCHEDULE_AHEAD_MS, 'startAt must be at most 30 days ahead')
      .optional(),
  })
  .strict()
export type CreateReplayInput = z.infer<typeof createReplaySchema>

// POST /api/messages/resolve
export const resolveSchema = z.object({ selection: selectionSchema, reason: text().trim().min(1, 'a reason is required').max(2000) }).strict()

export const listReplaysQuerySchema = z
  .object({ status: z.enum(REPLAY_JOB_STATUSES).optional(), cursor: text().max(200).optional(), limit: z.coerce.number().int().min(1).max(200).default(50) })
  .strict()
export const listReplayItemsQuerySchema = z
  .object({ status: z.enum(REPLAY_ITEM_STATUSES).optional(), cursor: text().max(200).optional(), limit: z.coerce.number().int().min(1).max(500).default(100) })
  .strict()

/** GET /api/replays/{id}/arrived: messages of the job's group or filter that arrived after it was planned. */
export type ReplayArrivedDto = {
  /** Dead messages of the same selection stored after the job was created; null when the job selected ids. */
  count: number | null
  /** The selection to plan a replay of exactly those. */
  selection: Selection | null
}

/** 'target-refused': the message would go where replays never go (lib/server/replay/target-policy.ts). */
export type ExclusionReason = 'not-dead' | 'replay-cap' | 'too-large' | 'headers-too-large' | 'no-origin' | 'unknown-source' | 'target-refused'

export type ReplayPlanTargetDto = {
  /** Exchange the messages go to ('' is the default exchange). */
  exchange: string
  /** null when the routing key differs per message (source target: each message's original key). */
  routingKey: string | null
  messages: number
  exists: boolean | null
  /** Queues the exchange routes these keys to (management API); null when unknown (management API unreachable, headers exchange). */
  queues: number | null
  queueNames: string[]
  alternateExchange: string | null
  /** True when the exchange reaches more queues than the one each message failed in. */
  fansOut: boolean
}

export type ReplayPlanDto = {
  /** Messages the selection matched when the plan was made. */
  matched: number
  /** Messages that will be published. */
  replayable: number
  excluded: { reason: ExclusionReason; count: number; sampleIds: string[] }[]
  target: ReplayTarget
  targets: ReplayPlanTargetDto[]
  entities: {
    count: number
    /** Entities on order-sensitive sources. */
    orderSensitive: number
    sources: { id: string; queue: string; orderSensitive: boolean; messages: number; entities: number }[]
  }
  pauseEntities: boolean
  ratePerSecond: number
  estimatedSeconds: number
  warnings: string[]
  /** False when the plan must not run as asked (e.g. a fan-out without allowFanOut, nothing replayable, target missing or unroutable). */
  canRun: boolean
  /** The replayable count the request must carry as `confirmCount` to start this (large) job; null when not needed. */
  confirmCount: number | null
  /** From how many messages a replay is large (Settings, GET /api/settings/replay-confirm). */
  largeJobMessages: number
  /** Messages that go out as an edited revision. */
  editedMessages: number
  /** Whether the admin's approval policy asks a second operator to approve this replay, and why. */
  approval: { required: boolean; reasons: string[] }
}

export type ReplayJobDto = {
  id: string
  kind: 'replay' | 'release'
  status: (typeof REPLAY_JOB_STATUSES)[number]
  total: number
  published: number
  confirmed: number
  unroutable: number
  failed: number
  skipped: number
  released: number
  /** Items cancelled before they were published. */
  cancelled: number
  ratePerSecond: number
  /** Measured publish rate over the last few seconds while running. */
  currentRate: number | null
  target: ReplayTarget
  selection: Selection
  pauseEntities: boolean
  cancelRequested: boolean
  error: string | null
  createdBy: string
  createdAt: string
  startedAt: string | null
  finishedAt: string | null
  /** When a scheduled job starts. */
  startAt: string | null
  /** Why the job needs (or needed) approval; null: it did not. */
  approvalReasons: string[] | null
  /** When an awaiting_approval job expires. */
  approvalExpiresAt: string | null
  approvedBy: string | null
  approvedAt: string | null
  rejectedBy: string | null
  rejectedAt: string | null
  /** The approver's or rejecter's comment. */
  decisionComment: string | null
}

export type ReplayJobDetailDto = ReplayJobDto & { plan: ReplayPlanDto; pauses: { id: string; queue: string; entityKey: string | null; status: string }[] }

export type ReplayItemDto = {
  /** The item's position in the job (seq), as a string. */
  id: string
  messageId: string
  kind: 'replay' | 'release'
  replayId: string
  status: (typeof REPLAY_ITEM_STATUSES)[number]
  exchange: string | null
  routingKey: string | null
  error: string | null
  publishedAt: string | null
  finishedAt: string | null
  entityKey: string | null
  errorType: string | null
}

export type ResolveResultDto = { resolved: number; skipped: number; skippedReasons: { reason: string; count: number }[] }
export type RestoreResultDto = { restored: number; skipped: number; skippedReasons: { reason: string; count: number }[] }

/** POST /api/replays: a dry run answers 200 {plan}; otherwise 201 {id, status, plan}. */
export type ReplayDryRunDto = { plan: ReplayPlanDto }
export type ReplayCreatedDto = { id: string; status: ReplayJobDto['status']; plan: ReplayPlanDto }

/** GET /api/replays */
export type ReplayListDto = { replays: ReplayJobDto[]; nextCursor: string | null }
/** GET /api/replays/{id}/items, in publish order. */
export type ReplayItemListDto = { items: ReplayItemDto[]; nextCursor: string | null }

/** One replay (or release) of a message, for its detail page (`replays` of GET /api/messages/{id}), oldest first. */
export type MessageReplayDto = {
  jobId: string
  kind: 'replay' | 'release'
  replayId: string
  status: (typeof REPLAY_ITEM_STATUSES)[number]
  exchange: string | null
  routingKey: string | null
  error: string | null
  createdBy: string
  createdAt: string
  publishedAt: string | null
  finishedAt: string | null
}

/** Set on a message that died again after a replay: the copy it was replayed from and the job that did it. */
export type ReplayedFromDto = { messageId: string; jobId: string; replayId: string }
