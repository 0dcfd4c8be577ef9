import { z } from 'zod'
import { text } from './fields'
import { selectionSchema, type Selection } from './selection'
import { replayTargetSchema } from './source'
import { stagingInputSchema } from '../replay-stages'
import { REPLAY_JOB_STATUSES } from '../replay-job-machine'
import type { RevisionDiffDto } from './revision'

export { replayTargetSchema }
export type ReplayTarget = z.infer<typeof replayTargetSchema>

/** The job's statuses are its state machine's (docs/ARCHITECTURE.md#job-lifecycle). */
export { REPLAY_JOB_STATUSES }
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
    /**
     * Canary, observation window and ramp stages: an object stages the job, with these values over the defaults
     * (`{}`: the defaults). Absent or false: published straight through. The plan's `stagingSuggested` says when the
     * dialog offers staging switched on (at least the admin's `stagedFromMessages`).
     */
    staging: z.union([z.literal(false), stagingInputSchema]).optional(),
    /**
     * Only the newest version per entity (sources with a version rule, docs/ARCHITECTURE.md#entity-versions): the
     * older ones in the selection are not published but resolved as superseded ("superseded by version V"), in the
     * transaction that creates the job.
     */
    onlyNewestPerEntity: z.boolean().optional(),
    /**
     * Start a new trace (docs/ARCHITECTURE.md#traces): each copy gets a fresh W3C traceparent and loses its old trace
     * headers. Absent or false: a copy keeps its traceparent. Either way it carries x-lazarus-origin-trace.
     */
    newTrace: z.boolean().optional(),
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

/**
 * GET /api/replays/{id}/edits: the edited messages a job sends, each as the revision it froze when the job was created
 * (docs/ARCHITECTURE.md#revisions) and that revision's diff against the stored original. Untrusted: render as text.
 */
export type ReplayEditDto = {
  messageId: string
  /** The job item's position (seq), as on the item list. */
  itemId: string
  itemStatus: string
  revision: number
  editedBy: string
  editedAt: string
  /** One line: what changed from the original. */
  summary: string
  diff: RevisionDiffDto
}
export type ReplayEditsDto = {
  /** Every item of the job sent as an edited revision. */
  total: number
  /** The first ones in publish order (at most `limit`). */
  edits: ReplayEditDto[]
  limit: number
}

/** GET /api/replays/{id}/arrived: messages of the job's group or filter that arrived after it was planned. */
export type ReplayArrivedDto = {
  /** Dead messages of the same selection stored after the job was created; null when the job selected ids. */
  count: number | null
  /** The selection to plan a replay of exactly those. */
  selection: Selection | null
}

/**
 * 'target-refused': the message would go where replays never go (lib/server/replay/target-policy.ts). 'superseded':
 * with onlyNewestPerEntity, a newer version of its entity is in the selection (resolved when the job is created).
 */
/** `jetstream`: a JetStream source's message while LAZARUS_NATS_URL is unset: nothing to publish it with (docs/jetstream.md#replay). */
export type ExclusionReason = 'not-dead' | 'replay-cap' | 'too-large' | 'headers-too-large' | 'no-origin' | 'unknown-source' | 'jetstream' | 'target-refused' | 'superseded'

/**
 * Entity versions among the messages a replay would publish, for sources with a version rule
 * (docs/ARCHITECTURE.md#entity-versions). Versions are numbers; for a `time` rule, epoch milliseconds.
 */
export type ReplayPlanVersionsDto = {
  /** How the versions read: null when the sources' rules differ. */
  type: 'number' | 'time' | null
  /** Replayable messages with an entity key, of sources with a version rule. */
  messages: number
  /** Of those, messages without a version (none found, or unparsable). */
  withoutVersion: number
  /** Of those, messages whose version did not parse (flag entity-version-unparsable). */
  unparsable: number
  entities: number
  /** Entities with more than one version in the selection. */
  entitiesWithSeveral: number
  /** Entities with a higher version among the stored dead letters outside the selection. */
  entitiesWithNewerStored: number
  /** Messages below their entity's newest version in the selection: what onlyNewestPerEntity leaves out. */
  older: number
  /** Entities with several versions or newer stored ones (at most 20); `versions` the highest ten, ascending. */
  sample: { sourceId: string; entityKey: string; versions: number[]; newest: number; newerStored: number; newestStored: number | null }[]
}

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
  /**
   * 'jetstream': `routingKey` is the subject the copies are published to, `queueNames` the stream's consumers whose
   * filter takes it, `exists` whether a stream captures it (docs/jetstream.md#replay). Absent on older plans: RabbitMQ.
   */
  broker?: 'rabbitmq' | 'jetstream'
  /** The stream that captures the subject (JetStream). */
  stream?: string | null
  /** How long that stream remembers a Nats-Msg-Id to drop a duplicate copy (JetStream). */
  duplicateWindowSeconds?: number | null
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
  /** Entity versions in the selection; null (or absent, in plans frozen before) when no source has a version rule. */
  versions?: ReplayPlanVersionsDto | null
  /** Only the newest version per entity is published; the older ones are excluded as 'superseded'. */
  onlyNewestPerEntity?: boolean
  /**
   * How many of the replayable messages go out as an edited revision (their newest, frozen when the job is created)
   * instead of the stored original (docs/ARCHITECTURE.md#revisions).
   */
  editedMessages: number
  /** Whether the admin's approval policy asks a second operator to approve this replay, and why. */
  approval: { required: boolean; reasons: string[] }
  // The three staging fields are always in a plan POST /api/replays answers; absent from plans frozen before staged
  // replays existed, and from release jobs.
  /** How the job would be staged; null: published straight through, as a small job is by default. */
  staging?: ReplayStagingPlanDto | null
  /** The defaults the dialog offers, whether or not this job is staged. */
  stagingDefaults?: ReplayStagingPlanDto
  /** True when the replayable count reaches the admin's `stagedFromMessages`: the dialog offers staging switched on. */
  stagingSuggested?: boolean
  /** From how many messages a replay is staged by default (Settings). */
  stagedFromMessages?: number
}

export type ReplayStagingPlanDto = {
  canaryCount: number | null
  canaryPercent: number | null
  rampPercents: number[]
  windowSeconds: number
  /** Where the window came from: the request, the source's retry tiers in the topology doctor's last run (+ 2 min), or 2 min alone. */
  windowFrom: 'request' | 'topology' | 'default'
  /** The sum of the retry tiers' message TTLs the doctor found, in seconds; null when none. */
  retryTtlSeconds: number | null
  haltPercent: number
  haltMinMessages: number
  /** The last item of each stage, for the replayable count (the job freezes them for what it takes). */
  stages: { throughSeq: number; size: number }[]
}

export type ReplayHaltDto = {
  id: string
  /** 0 is the canary. */
  stage: number
  reason: 'share' | 'new-group'
  /** What the decision saw: counts, the share and threshold, the new groups. */
  evidence: { published: number; refailed: number; sharePercent: number; haltPercent: number; haltMinMessages: number; newGroups: { id: string; title: string; count: number }[] }
  decidedAt: string
  outcome: 'resumed' | 'cancelled' | 'timed-out' | null
  endedAt: string | null
  endedBy: string | null
}

export type ReplayJobStagingDto = {
  stages: { index: number; throughSeq: number; size: number; startedAt: string | null; publishedAt: string | null }[]
  /** The stage being published or observed (0 is the canary). */
  current: number
  windowSeconds: number
  haltPercent: number
  haltMinMessages: number
  /** When the current stage's observation window ends (null while it is still publishing, and in the last stage). */
  nextStageAt: string | null
  /** The halt in force (status 'halted'), else the latest one, or null. */
  halt: ReplayHaltDto | null
}

/** GET /api/replays/{id}/refailures: replayed copies that dead-lettered again (linked by x-lazarus-replay-id). */
export type ReplayRefailuresDto = {
  /** Copies that came back dead, in all. */
  total: number
  /** Those that count toward a halt (after the last resume). */
  counted: number
  groups: { id: string; title: string; count: number; newGroup: boolean }[]
  /** Seconds from the publish to the copy being stored again. */
  within: { min: number; median: number; max: number } | null
  /** Per stage, for a staged job. */
  stages: { index: number; published: number; refailed: number }[] | null
  /** Each canary message (first 200), for a staged job. */
  canary: ReplayCanaryItemDto[] | null
}

export type ReplayCanaryItemDto = {
  seq: number
  messageId: string
  entityKey: string | null
  publishedAt: string | null
  state: 'failed-again' | 'no-news' | 'window-passed' | 'not-published'
  /** The dead letter the copy became, when it failed again. */
  refailedMessageId: string | null
  failedAfterSeconds: number | null
}

export type ReplayJobDto = {
  id: string
  kind: 'replay' | 'release'
  status: (typeof REPLAY_JOB_STATUSES)[number]
  total: number
  published: number
  confirmed: number
  unroutable: number
  /**
   * JetStream copies the stream dropped as duplicates: a previous run had published them before it crashed or stopped,
   * and the item counts as confirmed once (docs/jetstream.md#replay). Always 0 for RabbitMQ.
   */
  duplicates: number
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
  /** Copies start a new trace (fresh traceparent); false: they keep the one stored (docs/ARCHITECTURE.md#traces). */
  newTrace: boolean
  cancelRequested: boolean
  error: string | null
  createdBy: string
  createdAt: string
  startedAt: string | null
  finishedAt: string | null
  /** Null for a job published straight through. */
  staging: ReplayJobStagingDto | null
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
  /** A guard dropped the published copy: it had processed this higher version of the entity (epoch ms for a time rule). */
  supersededByVersion: number | null
  /** For people: "superseded by version V" (the version formatted for its rule; the audit entry names the guard). */
  supersededNote: string | null
}

// POST /api/guard/superseded: a guard's report (packages/guard/src/protocol.ts, SupersededReport).
const version = z.number().finite()
export const supersededReportSchema = z
  .object({
    queue: text().min(1).max(255),
    vhost: text().min(1).max(255),
    instance: text().min(1).max(255),
    replayId: text().min(1).max(128),
    entityKey: text().min(1).max(1024),
    version,
    supersededBy: version,
  })
  .strict()
  .refine((r) => r.version < r.supersededBy, { message: 'version must be lower than supersededBy', path: ['version'] })

/** The answer to a guard's report: whether an item took it (false: unknown replay id, or already recorded). */
export type SupersededRecordedDto = { recorded: boolean; jobId: string | null }

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
  /** See ReplayItemDto.supersededByVersion. */
  supersededByVersion?: number | null
  supersededNote?: string | null
}

/** Set on a message that died again after a replay: the copy it was replayed from and the job that did it. */
export type ReplayedFromDto = { messageId: string; jobId: string; replayId: string }
