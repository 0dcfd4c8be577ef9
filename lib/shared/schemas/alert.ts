import { z } from 'zod'
import { idSchema as id, isInt8Id, text } from './fields'
import { FINDING_SEVERITIES, type FindingSeverity } from './topology'

export const ALERT_KINDS = ['source-rate', 'group-rate', 'new-group', 'new-finding', 'replay-halted'] as const
/**
 * `recovered`: one subject of a rate rule is back under its threshold (recorded, not sent). `resolved`: the whole rule
 * has been quiet for its window after a notified firing; sent to every webhook, so pages close themselves.
 */
export const ALERT_EVENT_STATES = ['firing', 'recovered', 'resolved'] as const
/** What a webhook receives (docs/ARCHITECTURE.md#alerts): `generic` is `{text, alert, alerts}`, the format before there was a choice. */
export const WEBHOOK_FORMATS = ['generic', 'slack', 'teams', 'pagerduty'] as const
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number]
/** PagerDuty's Events API v2 endpoint, the URL of a `pagerduty` webhook unless another is given. */
export const PAGERDUTY_EVENTS_URL = 'https://events.pagerduty.com/v2/enqueue'

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
const webhookUrl = text().trim().url('must be a URL').refine((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL').max(2048)
export const createWebhookSchema = z
  .object({
    format: z.enum(WEBHOOK_FORMATS).default('generic'),
    /** Optional for `pagerduty` only (PAGERDUTY_EVENTS_URL). */
    url: webhookUrl.optional(),
    /** `pagerduty` only, and required there: the Events API v2 integration key of a PagerDuty service. */
    routingKey: text().trim().regex(/^[A-Za-z0-9_-]{20,64}$/, 'must be an Events API v2 integration key (20–64 letters and digits)').optional(),
  })
  .strict()
  .superRefine((input, ctx) => {
    if (input.format !== 'pagerduty' && !input.url) ctx.addIssue({ code: 'custom', path: ['url'], message: 'is required' })
    if (input.format === 'pagerduty' && !input.routingKey) ctx.addIssue({ code: 'custom', path: ['routingKey'], message: 'is required for a PagerDuty webhook' })
    if (input.format !== 'pagerduty' && input.routingKey) ctx.addIssue({ code: 'custom', path: ['routingKey'], message: 'is for PagerDuty webhooks only' })
  })
  .transform(({ format, url, routingKey }) => ({ format, url: url ?? PAGERDUTY_EVENTS_URL, routingKey: format === 'pagerduty' ? (routingKey ?? null) : null }))
export type CreateWebhookInput = z.infer<typeof createWebhookSchema>

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

export type AlertWebhookDto = {
  id: string
  url: string
  enabled: boolean
  createdAt: string
  format: WebhookFormat
  /** A PagerDuty webhook's routing key as shown back: its last four characters (`••••abcd`); null for other formats. */
  routingKeyHint: string | null
}

export type AlertEventDto = {
  id: string
  ruleId: string | null
  kind: string
  state: (typeof ALERT_EVENT_STATES)[number]
  /** `rule`: a resolution, which is about the whole rule. */
  subject: { type: 'source' | 'group' | 'finding' | 'replay' | 'rule'; id: string | null; label: string }
  ratePerMinute: number | null
  thresholdPerMinute: number | null
  text: string
  /** False when a cool-down suppressed the notification, or for recoveries (recorded, not sent); resolutions are sent. */
  notified: boolean
  delivery: { url: string; ok: boolean; status: number | null; error: string | null }[]
  at: string
}

/** GET /api/alerts/events, newest first. */
export type AlertEventListDto = { events: AlertEventDto[]; nextCursor: string | null }

/** GET /api/alerts: the banner's data and the settings. */
export type AlertsOverviewDto = { firing: AlertEventDto[]; rules: AlertRuleDto[]; webhooks: AlertWebhookDto[] }
