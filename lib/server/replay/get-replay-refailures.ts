import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { ReplayCanaryItemDto, ReplayRefailuresDto } from '@/lib/shared/schemas/replay'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { publishedPerStage } from './halt-decision'
import { selectRefailures, selectCanary } from './refailures'
import { selectJob } from './replay-store'

const CANARY_SHOWN = 200

const median = (sorted: number[]) => (sorted.length % 2 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2)
const round1 = (n: number) => Math.round(n * 10) / 10

/**
 * GET /api/replays/{id}/refailures: the job's replayed copies that dead-lettered again (docs/operations.md#staged-replays),
 * by error group (new groups marked), how long they took to come back, per stage, and each canary message's state:
 * failed again, no news yet (its window runs), or the window passed without it failing.
 */
export async function getReplayRefailures({ db: { sql }, id, ...scope }: { db: Db; id: string } & SourceScope): Promise<ReplayRefailuresDto> {
  const jobId = parseId(id, 'replay').toString()
  const job = await selectJob({ sql, id: jobId, sourceIds: allowedSourceIds(scope) })
  if (!job) throw notFound(`replay ${id}`)
  const rows = await selectRefailures({ sql, jobId })

  const groups = new Map<string, ReplayRefailuresDto['groups'][number]>()
  for (const r of rows) {
    const g = groups.get(r.group_id) ?? { id: r.group_id, title: r.group_title, count: 0, newGroup: r.new_group }
    g.count++
    groups.set(r.group_id, g)
  }
  const within = rows.map((r) => r.within_s).filter((s): s is number => s !== null).sort((a, b) => a - b)

  const bounds = job.stage_bounds
  let stages: ReplayRefailuresDto['stages'] = null
  let canary: ReplayCanaryItemDto[] | null = null
  if (bounds && bounds.length > 0) {
    const { rows: claimed } = await sql.query<{ claimed_through: number }>('SELECT claimed_through FROM replay_jobs WHERE id = $1::bigint', [jobId])
    stages = publishedPerStage(bounds, claimed[0]?.claimed_through ?? 0, bounds.length - 1)
    for (const r of rows) if (stages[r.stage]) stages[r.stage].refailed++
    const windowMs = job.window_ms ?? 0
    const { rows: now } = await sql.query<{ now: Date }>('SELECT now() AS now')
    const at = new Date(now[0].now).getTime()
    canary = (await selectCanary({ sql, jobId, through: bounds[0], limit: CANARY_SHOWN })).map((c) => ({
      seq: c.seq,
      messageId: c.dead_letter_id,
      entityKey: c.entity_key,
      publishedAt: c.published_at ? new Date(c.published_at).toISOString() : null,
      state: c.refailed_id ? 'failed-again' : c.status !== 'confirmed' ? 'not-published' : c.published_at && at - new Date(c.published_at).getTime() >= windowMs ? 'window-passed' : 'no-news',
      refailedMessageId: c.refailed_id,
      failedAfterSeconds: c.within_s === null ? null : round1(c.within_s),
    }))
  }
  return {
    total: rows.length,
    counted: rows.filter((r) => r.counted).length,
    groups: [...groups.values()].sort((a, b) => b.count - a.count),
    within: within.length ? { min: round1(within[0]), median: round1(median(within)), max: round1(within[within.length - 1]) } : null,
    stages,
    canary,
  }
}
