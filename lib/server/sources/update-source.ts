import 'server-only'
import { Prisma } from '@/lib/generated/prisma/client'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getDb } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import type { SourceDto, UpdateSourceInput } from '@/lib/shared/schemas/source'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { assertDrainableQueue } from './check-source-queue'
import { toSourceDto } from './to-source-dto'

export async function updateSource({ id, input, actor }: { id: string; input: UpdateSourceInput; actor: string }): Promise<SourceDto> {
  const { prisma, sql } = await getDb()
  const sourceId = parseId(id, 'source')
  const existing = await prisma.source.findUnique({ where: { id: sourceId } })
  if (!existing) throw notFound(`source ${id}`)
  // Enabling starts a drain: the same check as creating a source (the hold queue is Lazarus' own).
  if (input.enabled === true && !existing.enabled && existing.kind !== 'hold') {
    await assertDrainableQueue({
      vhost: existing.vhost,
      queue: existing.queue,
      drainedBefore: existing.drainedCount > 0n || existing.lastDrainAt !== null,
      confirmed: input.confirmNotWorkQueue === true,
    })
  }
  const row = await prisma.source.update({
    where: { id: sourceId },
    data: {
      ...(input.entityKey !== undefined && { entityKey: input.entityKey === null ? Prisma.DbNull : input.entityKey }),
      ...(input.orderSensitive !== undefined && { orderSensitive: input.orderSensitive }),
      ...(input.defaultTarget !== undefined && { defaultTarget: input.defaultTarget }),
      ...(input.enabled !== undefined && { enabled: input.enabled }),
      updatedAt: new Date(),
    },
  })
  const after = toSourceDto(row)
  await recordConfigChange({
    sql: sql,
    actor,
    action: 'source.updated',
    subject: { type: 'source', id: after.id },
    summary: `Changed source ${after.queue}: ${Object.keys(input).filter((k) => k !== 'confirmNotWorkQueue').join(', ')}`,
    before: toSourceDto(existing),
    after,
  })
  return after
}
