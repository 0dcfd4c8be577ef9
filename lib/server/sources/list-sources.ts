import 'server-only'
import { getDb } from '@/lib/server/platform/db'
import { listQueues, type QueueInfo } from '@/lib/server/platform/broker/management-api'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { SourceListDto } from '@/lib/shared/schemas/source'
import { toSourceDto } from './to-source-dto'

export type ListSourcesOptions = { withDepth?: boolean } & SourceScope

/** Sources with their drained counts and, when the management API answers, live broker depth. */
export async function listSources({ withDepth = true, ...scope }: ListSourcesOptions = {}): Promise<SourceListDto> {
  const { prisma } = await getDb()
  const sourceIds = allowedSourceIds(scope)
  const rows = await prisma.source.findMany({ where: sourceIds ? { id: { in: sourceIds.map(BigInt) } } : undefined, orderBy: [{ vhost: 'asc' }, { queue: 'asc' }] })
  if (!withDepth || rows.length === 0) return { sources: rows.map((r) => toSourceDto(r)), brokerError: null }
  const vhosts = [...new Set(rows.map((r) => r.vhost))]
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
    sources: rows.map((r) => toSourceDto(r, brokerError ? undefined : (queues.get(`${r.vhost}\u0000${r.queue}`) ?? null))),
    brokerError,
  }
}
