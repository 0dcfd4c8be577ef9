import 'server-only'
import type { TypedTable } from '@/lib/server/platform/broker/typed-fields'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { GroupTracesDto } from '@/lib/shared/schemas/trace-settings'
import { messageTrace } from '@/lib/server/traces/message-trace'
import { effectiveTraceTemplate } from '@/lib/server/traces/trace-settings'
import { needsRedaction, type RedactedView } from './redacted-search'

/** The group's newest messages looked at: a bounded walk of dead_letters_group_idx, whatever the group's size. */
const GROUP_TRACES_SCANNED = 500
/** Distinct traces listed. */
const GROUP_TRACES_LIMIT = 10

export type ListGroupTracesOptions = { db: Db; id: string; view?: RedactedView } & SourceScope

type TraceRow = { id: string; source_id: string; failed_at: Date; trace_id: string | null; span_id: string | null; headers: TypedTable | null }

/**
 * GET /api/groups/{id}/traces: the most recent distinct traces among the group's newest messages, each with its newest
 * message and "Open trace" link. A message stored before trace ids were read at ingest (or seen redacted) gives its
 * trace from its headers, which are read only for those.
 */
export async function listGroupTraces({ db, id, view, ...scope }: ListGroupTracesOptions): Promise<GroupTracesDto> {
  const groupId = parseId(id, 'group').toString()
  const sourceIds = allowedSourceIds(scope)
  const params: unknown[] = [groupId, view?.rawSourceIds ?? null]
  if (sourceIds) params.push(sourceIds)
  // A caller limited to some sources finds a group only if it has messages from them, as on the group's page: a group
  // of other sources answers 404, like one that does not exist, so its id says nothing.
  const { rows: found } = await db.sql.query<{ id: string }>(
    sourceIds
      ? `SELECT g.id::text FROM error_groups g WHERE g.id = $1::bigint
           AND EXISTS (SELECT 1 FROM group_source_stats x WHERE x.group_id = g.id AND x.source_id = ANY($2::bigint[]) AND x.count > 0)`
      : 'SELECT id::text FROM error_groups WHERE id = $1::bigint',
    sourceIds ? [groupId, sourceIds] : [groupId],
  )
  if (found.length === 0) throw notFound(`group ${id}`)
  const [{ rows }, template] = await Promise.all([
    db.sql.query<TraceRow>(
      `SELECT d.id::text, d.source_id::text, d.failed_at, d.trace_id, d.span_id,
         CASE WHEN d.trace_id IS NULL OR ($2::bigint[] IS NOT NULL AND NOT d.source_id = ANY($2::bigint[])) THEN d.headers END AS headers
       FROM dead_letters d
       WHERE d.group_id = $1::bigint${sourceIds ? ' AND d.source_id = ANY($3::bigint[])' : ''}
       ORDER BY d.failed_at DESC, d.id DESC LIMIT ${GROUP_TRACES_SCANNED}`,
      params,
    ),
    effectiveTraceTemplate({ db }),
  ])
  const traces: GroupTracesDto['traces'] = []
  const seen = new Set<string>()
  for (const row of rows) {
    if (traces.length >= GROUP_TRACES_LIMIT) break
    const redacted = needsRedaction(view, row.source_id)
    const headers = row.headers ?? {}
    const trace = messageTrace({
      stored: { traceId: row.trace_id, spanId: row.span_id },
      headers: redacted ? view.redactor.typedTable(headers) : headers,
      template,
      redacted,
    })
    if (!trace || seen.has(trace.traceId)) continue
    seen.add(trace.traceId)
    traces.push({ ...trace, messageId: row.id, failedAt: row.failed_at.toISOString() })
  }
  return { traces, scanned: rows.length }
}
