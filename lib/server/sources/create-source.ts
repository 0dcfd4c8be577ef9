import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getDb } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { CreateSourceInput, SourceDto } from '@/lib/shared/schemas/source'
import { assertDrainableQueue } from './check-source-queue'
import { toSourceDto } from './to-source-dto'

export async function createSource(input: CreateSourceInput, actor: string): Promise<SourceDto> {
  const { prisma, sql } = await getDb()
  const existing = await prisma.source.findUnique({ where: { vhost_queue: { vhost: input.vhost, queue: input.queue } } })
  if (existing) throw new AppError('conflict', `queue "${input.queue}" on vhost "${input.vhost}" is already a source`, { id: existing.id.toString() })
  // A disabled source drains nothing yet; the check applies when it is enabled (updateSource).
  if (input.enabled !== false) {
    await assertDrainableQueue({ vhost: input.vhost, queue: input.queue, drainedBefore: false, confirmed: input.confirmNotWorkQueue === true })
  }
  const row = await prisma.source.create({
    data: {
      vhost: input.vhost,
      queue: input.queue,
      entityKey: input.entityKey ?? undefined,
      orderSensitive: input.orderSensitive ?? false,
      defaultTarget: input.defaultTarget ?? { type: 'source' },
      enabled: input.enabled ?? true,
    },
  })
  const created = toSourceDto(row)
  await recordConfigChange({
    sql: sql,
    actor,
    action: 'source.created',
    subject: { type: 'source', id: created.id },
    summary: `Added source ${input.queue}${input.confirmNotWorkQueue ? ' (confirmed not a work queue)' : ''}`,
    before: null,
    after: { ...created, confirmNotWorkQueue: input.confirmNotWorkQueue === true },
  })
  return created
}

/**
 * Registers the LAZARUS_SOURCES queues (default vhost); existing sources keep their settings. Not checked for signs of
 * a work queue: the environment is the operator's configuration, trusted like AMQP_URL.
 */
export async function ensureSources(queues: string[]): Promise<void> {
  if (queues.length === 0) return
  const { sql } = await getDb()
  await sql.query(
    `INSERT INTO sources (vhost, queue) SELECT '/', q FROM unnest($1::text[]) AS q ON CONFLICT (vhost, queue) DO NOTHING`,
    [queues],
  )
}
