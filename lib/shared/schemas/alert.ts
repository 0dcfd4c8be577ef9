import { z } from 'zod'
import { idSchema as id, isInt8Id, text } from './fields'
import { FINDING_SEVERITIES, type FindingSeverity } from './topology'

export const ALERT_KINDS = ['source-rate', 'group-rate', 'new-group', 'new-finding', 'replay-halted'] as const

// POST /api/alerts/rules
export const createAlertRuleSchema = z
  .discriminatedUnion('kind', [
    z.object({
      kind: z.literal('source-rate'),
      /** Omit for every source. */
      sourceId: id.optional(),
      thresholdPerMinute: z.number().positive().max(1_000_000),
      windowMinutes: z.number().int().min(1).max(1440).default(5),
      cooldownMinutes: z.number().int().min(0).max(10_080).default(30),
    }).strict(),
    z.object({
      kind: z.literal('group-rate'),
      /** Omit for every group. */
      groupId: id.optional(),
      thresholdPerMinute: z.number().positive().max(1_000_000),
      windowMinutes: z.number().int().min(1).max(1440).default(5),
      cooldownMinutes: z.number().int().min(0).max(10_080).default(30),
    }).strict(),
    z.object({ kind: z.literal('new-group') }).strict(),
    z.object({
      kind: z.literal('new-finding'),
      /** The topology doctor opened a finding this severe or worse (docs/topology.md#alerts-and-metrics). */
      minSeverity: z.enum(FINDING_SEVERITIES).default('warning'),
    }).strict(),
    /** A staged replay halted on its re-failures (docs/operations.md#staged-replays). */
    z.object({ kind: z.literal('replay-halted') }).strict(),
  ])
export type CreateAlertRuleInput = z.infer<typeof createAlertRuleSchema>

export const updateAlertRuleSchema = z.object({ enabled: z.boolean() }).strict()

// POST /api/alerts/webhooks
export const createWebhookSchema = z
  .object({ url: text().trim().url('must be a URL').refine((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL').max(2048) })
  .strict()

export const listAlertEventsQuerySchema = z
  .object({
    // The last id seen ('' or absent: the newest page). Checked as an id: PostgreSQL refuses numbers beyond bigint.
    cursor: z.string().refine((v) => v === '' || isInt8Id(v), 'cursor is not valid; use the nextCursor value of a previous page').optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict()

export type AlertRuleDto = {
  id: string
  kind: (typeof ALERT_KINDS)[number]
  source: { id: string; queue: string } | null
  group: { id: string; title: string } | null
  thresholdPerMinute: number | null
  /** new-finding rules: the least severity that fires. */
  minSeverity: FindingSeverity | null
  windowMinutes: number
  cooldownMinutes: number
  enabled: boolean
  createdBy: string
  createdAt: string
  /** When the evaluator last compared this rule with the rates (null: not yet, or disabled since before then). */
  evaluatedAt: string | null
  /** Subjects of this rule currently in breach. */
  firing: number
}

export type AlertWebhookDto = { id: string; url: string; enabled: boolean; createdAt: string }

export type AlertEventDto = {
  id: string
  ruleId: string | null
  kind: string
  state: 'firing' | 'recovered'
  subject: { type: 'source' | 'group' | 'finding' | 'replay'; id: string | null; label: string }
  ratePerMinute: number | null
  thresholdPerMinute: number | null
  text: string
  /** False when a cool-down suppressed the notification, or for recoveries (recorded, not sent). */
  notified: boolean
  delivery: { url: string; ok: boolean; status: number | null; error: string | null }[]
  at: string
}

/** GET /api/alerts/events, newest first. */
export type AlertEventListDto = { events: AlertEventDto[]; nextCursor: string | null }

/** GET /api/alerts: the banner's data and the settings. */
export type AlertsOverviewDto = { firing: AlertEventDto[]; rules: AlertRuleDto[]; webhooks: AlertWebhookDto[] }
