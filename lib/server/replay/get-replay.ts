import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { ReplayJobDetailDto } from '@/lib/shared/schemas/replay'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { selectJob, selectJobPauses } from './replay-store'
import { toReplayJobDto } from './to-replay-dto'

/** GET /api/replays/{id}: the job with its progress, its frozen plan and the pauses it holds. */
export async function getReplay({ db: { sql }, id, ...scope }: { db: Db; id: string } & SourceScope): Promise<ReplayJobDetailDto> {
  const jobId = parseId(id, 'replay').toString()
  const row = await selectJob({ sql, id: jobId, sourceIds: allowedSourceIds(scope) })
  if (!row) throw notFound(`replay ${id}`)
  const pauses = await selectJobPauses({ sql, jobId })
  return { ...toReplayJobDto(row), plan: row.plan, pauses: pauses.map((p) => ({ id: p.id, queue: p.queue, entityKey: p.entity_key, status: p.status })) }
}
