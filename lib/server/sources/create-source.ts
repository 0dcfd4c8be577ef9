import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { CreateSourceInput, SourceDto } from '@/lib/shared/schemas/source'
import { assertDrainableQueue } from './check-source-queue'
import { findSourceByQueue, insertMissingSources, insertSource } from './sources-store'
import { APPLY_WAIT_MS, type SourceChangeOptions } from './source-changes'
import { toSourceDto } from './to-source-dto'

export type CreateSourceOptions = { db: Db; input: CreateSourceInput; actor: string } & SourceChangeOptions

export async function createSource({ db, input, actor, sourcesChanged }: CreateSourceOptions): Promise<SourceDto> {
  const existing = await findSourceByQueue({ prisma: db.prisma, vhost: input.vhost, queue: input.queue })
  if (existing) throw new AppError('conflict', `queue "${input.queue}" on vhost "${input.vhost}" is already a source`, { id: existing.id.toString() })
  // A disabled source drains nothing yet; the check applies when it is enabled (updateSource).
  if (input.enabled !== false) {
    await assertDrainableQueue({ vhost: input.vhost, queue: input.queue, drainedBefore: false, confirmed: input.confirmNotWorkQueue === true })
  }
  const source = await crudTransaction(db, async ({ prisma, sql }) => {
    const created = toSourceDto(await insertSource({ prisma, input }))
    await recordConfigChange({
      sql,
      actor,
      action: 'source.created',
      subject: { type: 'source', id: created.id },
      summary: `Added source ${input.queue}${input.confirmNotWorkQueue ? ' (confirmed not a work queue)' : ''}`,
      before: null,
      after: { ...created, confirmNotWorkQueue: input.confirmNotWorkQueue === true },
    })
    return created
  })
  await sourcesChanged?.notifyAndWait(APPLY_WAIT_MS)
  return source
}

/**
 * Registers the LAZARUS_SOURCES queues (default vhost); existing sources keep their settings. Not checked for signs of
 * a work queue: the environment is the operator's configuration, trusted like AMQP_URL.
 */
export async function ensureSources({ db, queues }: { db: Db; queues: string[] }): Promise<void> {
  if (queues.length === 0) return
  await insertMissingSources({ sql: db.sql, queues })
}
