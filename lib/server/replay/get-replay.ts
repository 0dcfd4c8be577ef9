import 'server-only'
import { getDb } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { ReplayJobDetailDto, ReplayPlanDto } from '@/lib/shared/schemas/replay'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { JOB_COLUMNS, jobWithinSourcesSql, toReplayJobDto, type JobDtoRow } from './to-replay-dto'

/** GET /api/replays/{id}: the job with its progress, its frozen plan and the pauses it holds. */
export async function getReplay({ id, ...scope }: { id: string } & SourceScope): Promise<ReplayJobDetailDto> {
  const jobId = parseId(id, 'replay')
  const { sql } = await getDb()
  const sourceIds = allowedSourceIds(scope)
  const { rows } = await sql.query<JobDtoRow & { plan: ReplayPlanDto }>(
    `SELECT ${JOB_COLUMNS}, j.plan FROM replay_jobs j WHERE j.id = $1::bigint${sourceIds ? ` AND ${jobWithinSourcesSql('$2')}` : ''}`,
    sourceIds ? [jobId.toString(), sourceIds] : [jobId.toString()],
  )
  const row = rows[0]
  if (!row) throw notFound(`replay ${id}`)
  const { rows: pauses } = await sql.query<{ id: string; queue: string; entity_key: string | null; status: string }>(
    'SELECT id::text, queue, entity_key, status FROM pauses WHERE replay_job_id = $1::bigint ORDER BY id LIMIT 1000',
    [jobId.toString()],
  )
  return { ...toReplayJobDto(row), plan: row.plan, pauses: pauses.map((p) => ({ id: p.id, queue: p.queue, entityKey: p.entity_key, status: p.status })) }
}
