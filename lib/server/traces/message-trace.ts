import 'server-only'
import type { TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { traceUrl, type TraceDto } from '@/lib/shared/schemas/trace-settings'
import { readTraceContext } from './trace-context'

export type MessageTraceOptions = {
  /** dead_letters.trace_id and span_id, read at ingest; null on rows stored before (and on messages without a trace). */
  stored: { traceId: string | null; spanId: string | null }
  /** The headers as the caller sees them (redacted for a viewer). */
  headers: TypedTable
  /** The effective "Open trace" template (trace-settings.ts), or null. */
  template: string | null
  /** The caller sees the headers redacted: the ids come from what redaction left of them, never from the columns. */
  redacted: boolean
}

/**
 * A message's trace for display: the ids stored at ingest, or for a message stored before they were (or seen redacted)
 * the ids its headers carry, with the "Open trace" link when a template is set.
 */
export function messageTrace({ stored, headers, template, redacted }: MessageTraceOptions): TraceDto | null {
  const ids = !redacted && stored.traceId !== null ? { traceId: stored.traceId, spanId: stored.spanId } : readTraceContext(headers)
  if (!ids) return null
  return { traceId: ids.traceId, spanId: ids.spanId, url: template === null ? null : traceUrl(template, ids) }
}
