import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import type { Sql } from '@/lib/server/platform/db/sql'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { GuardCountsDto, GuardStatusListDto, GuardStatusQuery } from '@/lib/shared/schemas/pause'
import { countGuards } from './guard-heartbeat'
import { findPausableSource, listPausableSources, mostCommonOriginQueue } from './pauses-store'

export type GuardStatusOptions = { db: Db } & GuardStatusQuery & SourceScope

/** As createPause picks a source's default consumer queue (create-pause.ts). */
const ORIGIN_SAMPLE = 1_000

/**
 * GET /api/pauses/guards: how many guards listen on a source's consumer queue, and how many of them are up to date
 * (docs/ARCHITECTURE.md#pause-hold-release, "Who listens"). The queue is the one given, or the one a pause would take
 * by default (where most of the source's recent dead letters failed). A pause on a queue no guard listens on holds
 * nothing, so the pause form says so before it is created.
 */
export async function guardStatus({ db: { sql }, sourceId, queue, ...scope }: GuardStatusOptions): Promise<GuardStatusListDto> {
  const allowed = allowedSourceIds(scope)
  if (sourceId !== undefined && allowed && !allowed.includes(sourceId)) throw notFound(`source ${sourceId}`)
  const sources = sourceId === undefined ? await listPausableSources({ sql, sourceIds: allowed }) : [await findPausableSource({ sql, sourceId })]
  const targets: { sourceId: string; vhost: string; queue: string }[] = []
  for (const source of sources) {
    if (!source || source.kind === 'hold' || source.kind === 'jetstream') {
      if (sourceId !== undefined) throw notFound(`source ${sourceId}`)
      continue
    }
    const consumerQueue = queue ?? (await mostCommonOriginQueue({ sql, sourceId: source.id, sample: ORIGIN_SAMPLE }))
    if (consumerQueue) targets.push({ sourceId: source.id, vhost: source.vhost, queue: consumerQueue })
  }
  const counts = await guardCounts({ sql, queues: targets })
  return { queues: targets.map((t) => ({ sourceId: t.sourceId, ...counts.get(queueKey(t))! })) }
}

const queueKey = (q: { vhost: string; queue: string }) => JSON.stringify([q.vhost, q.queue])

/** The guard counts of each queue named (each once), by queueKey. */
export async function guardCounts({ sql, queues }: { sql: Sql; queues: { vhost: string; queue: string }[] }): Promise<Map<string, GuardCountsDto>> {
  const distinct = new Map(queues.map((q) => [queueKey(q), { vhost: q.vhost, queue: q.queue }]))
  const rows = await countGuards({ sql, queues: [...distinct.values()] })
  return new Map(rows.map((r) => [queueKey(r), { vhost: r.vhost, queue: r.queue, listening: r.listening, upToDate: r.up_to_date }]))
}
