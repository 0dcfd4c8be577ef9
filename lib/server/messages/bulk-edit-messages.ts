import 'server-only'
import { randomUUID } from 'node:crypto'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { MESSAGES_FROM } from '@/lib/server/selection/message-filter-sql'
import { describeSelection, selectionSql, selectionSubject } from '@/lib/server/selection/selection-sql'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { BulkEditInput, BulkEditOperation, BulkEditResultDto, BulkEditSampleDto } from '@/lib/shared/schemas/revision'
import { applyBulkOperation, assertBulkOperation, bodyEncodingOf, describeDiff, diffContent, isEmptyDiff } from './revision-content'
import { insertRevisions, loadEditBases, type NewRevision } from './revisions-store'

/** A bulk edit touches at most this many messages (each is read, edited and written in one transaction). */
export const MAX_BULK_EDIT = 5_000
const CHUNK = 200
const SAMPLE = 5

export type BulkEditMessagesOptions = { db: Db; input: BulkEditInput; actor: string; maxBodyBytes: number } & SourceScope

/**
 * POST /api/messages/bulk-edit: one operation (set or remove a header, a JSON Patch) on every message of a selection,
 * each from its newest revision. A preview changes nothing and returns the diffs of the first few messages it applies
 * to and, per reason, how many it does not apply to. Applying writes one revision per message it applies to, all in
 * one transaction, and one `messages.bulk-edited` audit entry.
 */
export async function bulkEditMessages({ db: { sql }, input, actor, maxBodyBytes, ...scope }: BulkEditMessagesOptions): Promise<BulkEditResultDto> {
  const sourceIds = allowedSourceIds(scope)
  assertBulkOperation(input.operation)
  const run = async (tx: Sql) => {
    const params: unknown[] = []
    const { where, searchJoin } = selectionSql({ selection: input.selection, params, sourceIds })
    const { rows } = await tx.query<{ id: string }>(`SELECT d.id::text FROM ${MESSAGES_FROM} ${searchJoin} WHERE ${where} ORDER BY d.id LIMIT ${MAX_BULK_EDIT + 1}`, params)
    if (rows.length > MAX_BULK_EDIT) throw new AppError('unprocessable', `A bulk edit changes at most ${MAX_BULK_EDIT} messages; narrow the selection`)
    const bulkId = input.preview ? null : randomUUID()
    const result = await editInChunks({ sql: tx, ids: rows.map((r) => r.id), operation: input.operation, maxBodyBytes, write: !input.preview, actor, bulkId })
    if (!input.preview) {
      await recordAudit({
        sql: tx,
        actor,
        action: 'messages.bulk-edited',
        subject: selectionSubject(input.selection),
        summary: `Bulk edit (${describeOperation(input.operation)}) of ${describeSelection(input.selection)}: ${result.edited} revision${result.edited === 1 ? '' : 's'} written, ${rows.length - result.applicable} not applicable`,
        details: { bulkId, selection: input.selection, operation: input.operation, matched: rows.length, edited: result.edited, notApplicable: result.notApplicable, sample: result.sample },
        outcome: result.edited > 0 ? 'edited' : 'nothing edited',
      })
    }
    return { preview: input.preview, matched: rows.length, bulkId, ...result }
  }
  return input.preview ? run(sql) : sql.transaction(run)
}

async function editInChunks(options: { sql: Sql; ids: string[]; operation: BulkEditOperation; maxBodyBytes: number; write: boolean; actor: string; bulkId: string | null }) {
  const { sql, ids, operation } = options
  const reasons = new Map<string, { count: number; sampleIds: string[] }>()
  const sample: BulkEditSampleDto[] = []
  let applicable = 0
  let edited = 0
  for (let i = 0; i < ids.length; i += CHUNK) {
    const bases = await loadEditBases({ sql, ids: ids.slice(i, i + CHUNK) })
    const revisions: NewRevision[] = []
    for (const base of bases) {
      const outcome = applyBulkOperation(base.content, operation, options.maxBodyBytes)
      const diff = outcome.ok ? diffContent(base.content, outcome.content) : null
      if (!outcome.ok || !diff || isEmptyDiff(diff)) {
        const reason = outcome.ok ? 'it changes nothing' : outcome.reason
        const entry = reasons.get(reason) ?? { count: 0, sampleIds: [] }
        entry.count++
        if (entry.sampleIds.length < SAMPLE) entry.sampleIds.push(base.id)
        reasons.set(reason, entry)
        continue
      }
      applicable++
      if (sample.length < SAMPLE) sample.push({ id: base.id, diff })
      if (options.write) {
        revisions.push({ id: base.id, content: outcome.content, bodyEncoding: bodyEncodingOf(outcome.content.body), diff, summary: describeDiff(diff), actor: options.actor, bulkId: options.bulkId })
      }
    }
    edited += (await insertRevisions({ sql, revisions })).length
  }
  const notApplicable = [...reasons].map(([reason, r]) => ({ reason, ...r })).sort((a, b) => b.count - a.count)
  return { applicable, notApplicable, sample, edited }
}

function describeOperation(operation: BulkEditOperation): string {
  if (operation.type === 'set-header') return `set header "${operation.name}"`
  if (operation.type === 'remove-header') return `remove header "${operation.name}"`
  return `JSON Patch of ${operation.patch.length} operation${operation.patch.length === 1 ? '' : 's'}`
}
