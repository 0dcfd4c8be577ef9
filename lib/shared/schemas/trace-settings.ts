import { z } from 'zod'
import { text } from './fields'

/*
 * The "Open trace" link (docs/ARCHITECTURE.md#traces): a URL template with `{traceId}` and `{spanId}`, set by
 * LAZARUS_TRACE_URL_TEMPLATE or by an admin in Settings (the stored one wins).
 */

export const MAX_TRACE_URL_TEMPLATE_CHARS = 2048

/** What a template's placeholders stand for while it is checked: ids of the right shape. */
const SAMPLE_IDS = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' }

/** The link to one trace: each placeholder replaced by its id, URL-encoded. */
export function traceUrl(template: string, ids: { traceId: string; spanId: string | null }): string {
  return template.replaceAll('{traceId}', encodeURIComponent(ids.traceId)).replaceAll('{spanId}', encodeURIComponent(ids.spanId ?? ''))
}

/** Whether the template, filled in, is an absolute http or https URL (never javascript:, data: or a relative path). */
export function isHttpTemplate(template: string): boolean {
  try {
    const url = new URL(traceUrl(template, SAMPLE_IDS))
    return url.protocol === 'http:' || url.protocol === 'https:'
  } catch {
    return false
  }
}

export const traceUrlTemplateSchema = text()
  .trim()
  .min(1)
  .max(MAX_TRACE_URL_TEMPLATE_CHARS)
  .refine((template) => template.includes('{traceId}'), 'the template needs a {traceId} placeholder')
  .refine(isHttpTemplate, 'the template must give an http or https URL')

// PUT /api/settings/traces
export const updateTraceSettingsSchema = z.object({ urlTemplate: traceUrlTemplateSchema.nullable() }).strict()
export type UpdateTraceSettingsInput = z.infer<typeof updateTraceSettingsSchema>

/** GET /api/settings/traces (and the answer to PUT). */
export type TraceSettingsDto = {
  /** The admin's template; null: none stored, LAZARUS_TRACE_URL_TEMPLATE applies. */
  urlTemplate: string | null
  /** LAZARUS_TRACE_URL_TEMPLATE, shown beside the stored one. */
  environmentTemplate: string | null
  /** What links use: the stored template, else the environment's, else none (no "Open trace" links). */
  effectiveTemplate: string | null
  updatedAt: string | null
  updatedBy: string | null
}

/** A message's trace, as the message page and a group's recent traces show it. */
export type TraceDto = {
  traceId: string
  spanId: string | null
  /** The "Open trace" link; null when no template is set. */
  url: string | null
}

/** GET /api/groups/{id}/traces: the group's most recent distinct traces, newest first. */
export type GroupTracesDto = {
  traces: (TraceDto & { messageId: string; failedAt: string })[]
  /** How many of the group's newest messages were looked at (the list says "among the last N"). */
  scanned: number
}
