import 'server-only'
import { Prisma, type Source } from '@/lib/generated/prisma/client'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { SourceDto, UpdateSourceInput } from '@/lib/shared/schemas/source'

/**
 * The `sources` table as admins manage it, through Prisma (plain CRUD: docs/ARCHITECTURE.md#how-code-gets-the-database).
 * `prisma` is the client or a CRUD transaction's (lib/server/platform/db/crud-transaction.ts). The drainer keeps its
 * counters and errors in SQL on its own pool (lib/server/engines/drainer/).
 */
type SourcesPrisma = { prisma: Prisma.TransactionClient }

export function findSource({ prisma, id }: SourcesPrisma & { id: bigint }): Promise<Source | null> {
  return prisma.source.findUnique({ where: { id } })
}

export function findSourceByQueue({ prisma, vhost, queue }: SourcesPrisma & { vhost: string; queue: string }): Promise<Source | null> {
  return prisma.source.findUnique({ where: { vhost_queue: { vhost, queue } } })
}

/** The sources in `ids` (null: all), by vhost and queue. */
export function listSourceRows({ prisma, ids }: SourcesPrisma & { ids: string[] | null }): Promise<Source[]> {
  return prisma.source.findMany({ where: ids ? { id: { in: ids.map(BigInt) } } : undefined, orderBy: [{ vhost: 'asc' }, { queue: 'asc' }] })
}

/** A new source's row; JetStream sources have `stream` (and maybe `consumer`) and an empty vhost. */
export type NewSourceRow = { kind: 'dlq' | 'jetstream' } & Pick<SourceDto, 'vhost' | 'queue' | 'stream' | 'consumer' | 'removeAfterCapture' | 'entityKey' | 'entityVersion' | 'orderSensitive' | 'critical' | 'defaultTarget' | 'enabled'>

export function insertSource({ prisma, row }: SourcesPrisma & { row: NewSourceRow }): Promise<Source> {
  return prisma.source.create({
    data: {
      kind: row.kind,
      vhost: row.vhost,
      queue: row.queue,
      stream: row.stream,
      consumer: row.consumer,
      removeAfterCapture: row.removeAfterCapture,
      entityKey: row.entityKey ?? undefined,
      entityVersion: row.entityVersion ?? undefined,
      orderSensitive: row.orderSensitive,
      critical: row.critical,
      defaultTarget: row.defaultTarget,
      enabled: row.enabled,
    },
  })
}

/**
 * Sources of these queues on the default vhost; queues that already are one keep their settings. SQL, not Prisma:
 * this is the worker's only CRUD (LAZARUS_SOURCES at start-up), and Prisma's first query loads its query compiler,
 * about 70 MiB resident for the rest of the worker's life (docs/performance.md#memory).
 */
export async function insertMissingSources({ sql, queues }: { sql: Sql; queues: string[] }): Promise<void> {
  await sql.query(
    `INSERT INTO sources (vhost, queue) SELECT '/', queue FROM unnest($1::text[]) WITH ORDINALITY AS q (queue, n) ORDER BY n ON CONFLICT (vhost, queue) DO NOTHING`,
    [queues],
  )
}

export function updateSourceColumns({ prisma, id, input }: SourcesPrisma & { id: bigint; input: UpdateSourceInput }): Promise<Source> {
  return prisma.source.update({
    where: { id },
    data: {
      ...(input.entityKey !== undefined && { entityKey: input.entityKey === null ? Prisma.DbNull : input.entityKey }),
      ...(input.entityVersion !== undefined && { entityVersion: input.entityVersion === null ? Prisma.DbNull : input.entityVersion }),
      ...(input.orderSensitive !== undefined && { orderSensitive: input.orderSensitive }),
      ...(input.critical !== undefined && { critical: input.critical }),
      ...(input.defaultTarget !== undefined && { defaultTarget: input.defaultTarget }),
      ...(input.enabled !== undefined && { enabled: input.enabled }),
      ...(input.removeAfterCapture !== undefined && { removeAfterCapture: input.removeAfterCapture }),
      updatedAt: new Date(),
    },
  })
}

export function countStoredMessages({ prisma, sourceId }: SourcesPrisma & { sourceId: bigint }): Promise<number> {
  return prisma.deadLetter.count({ where: { sourceId } })
}

/**
 * Deletes a source with its per-source counters and buckets (no foreign key, see migration
 * 20261205200000_group_source_counters): zeros, or history of messages retention removed. SQL for the buckets: they
 * are found through the counters' (group, source) pairs, since group_source_arrivals is keyed by group first.
 */
export async function deleteSourceAndCounters({ prisma, sql, id }: SourcesPrisma & { sql: Sql; id: bigint }): Promise<void> {
  await prisma.source.delete({ where: { id } })
  await sql.query(
    `WITH buckets AS (
       DELETE FROM group_source_arrivals a USING group_source_stats s
       WHERE s.source_id = $1::bigint AND a.group_id = s.group_id AND a.source_id = s.source_id
     )
     DELETE FROM group_source_stats WHERE source_id = $1::bigint`,
    [id.toString()],
  )
}
