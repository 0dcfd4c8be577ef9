import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { selectionSql } from '@/lib/server/selection/selection-sql'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { ReplayArrivedDto } from '@/lib/shared/schemas/replay'
import type { Selection } from '@/lib/shared/schemas/selection'
import { countArrived } from './approval-store'
import { selectJob } from './replay-store'

/**
 * GET /api/replays/{id}/arrived: "N arrived since this replay was planned". A job is frozen at creation; messages of
 * its group or filter stored (ingested) after its created_at are not in it. Counts those still dead, in the caller's
 * sources, and returns the selection that replays exactly them. A job of explicit ids has no such selection. The job's
 * own replayed copies that failed again (a staged job's re-failures) arrived later too, but they are not new messages:
 * they are left out of the count and of the selection.
 */
export async function countReplayArrived({ db, id, ...scope }: { db: Db; id: string } & SourceScope): Promise<ReplayArrivedDto> {
  const jobId = parseId(id, 'replay').toString()
  const sourceIds = allowedSourceIds(scope)
  const job = await selectJob({ sql: db.sql, id: jobId, sourceIds })
  if (!job) throw notFound(`replay ${id}`)
  if (job.kind !== 'replay' || 'ids' in job.selection) return { count: null, selection: null }
  const selection: Selection = { ...job.selection, arrivedAfter: new Date(job.created_at).toISOString(), notCopiesOf: jobId }
  const params: unknown[] = []
  const { where } = selectionSql({ selection, params, sourceIds })
  return { count: await countArrived({ sql: db.sql, where, params }), selection }
}
