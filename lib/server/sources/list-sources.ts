import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { listQueues, type QueueInfo } from '@/lib/server/platform/broker/management-api'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { SourceListDto } from '@/lib/shared/schemas/source'
import { listSourceRows } from './sources-store'
import { toSourceDto } from './to-source-dto'

export type ListSourcesOptions = { db: Db; withDepth?: boolean } & SourceScope

/** Sources with their drained counts and, when the management API answers, live broker depth. */
export async function listSources({ db, withDepth = true, ...scope }: ListSourcesOptions): Promise<SourceListDto> {
  const rows = await listSourceRows({ prisma: db.prisma, ids: allowedSourceIds(scope) })
  if (!withDepth || rows.length === 0) return { sources: rows.map((r) => toSourceDto(r)), brokerError: null }
  // JetStream sources have no vhost and no queue on RabbitMQ (docs/jetstream.md).
  const vhosts = [...new Set(rows.filter((r) => r.kind !== 'jetstream').map((r) => r.vhost))]
  const queues = new Map<string, QueueInfo>()
  let brokerError: string | null = null
  await Promise.all(
    vhosts.map(async (vhost) => {
      try {
        for (const q of await listQueues(vhost)) queues.set(`${q.vhost}\u0000${q.name}`, q)
      } catch (error) {
        brokerError = `management API unavailable: ${(error as Error).message}`
      }
    }),
  )
  return {
    sources: rows.map((r) => toSourceDto(r, brokerError || r.kind === 'jetstream' ? undefined : (queues.get(`${r.vhost}\u0000${r.queue}`) ?? null))),
    brokerError,
  }
}
