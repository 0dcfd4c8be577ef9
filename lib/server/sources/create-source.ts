import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { CreateSourceInput, SourceDto } from '@/lib/shared/schemas/source'
import { assertDrainableQueue } from './check-source-queue'
import { findSourceByQueue, insertMissingSources, insertSource } from './sources-store'
import { newSourceRow } from './new-source-row'
import { assertJetStreamSourceExists } from './check-jetstream-source'
import { getConfig, type Config } from '@/lib/server/platform/config'
import { APPLY_WAIT_MS, type SourceChangeOptions } from './source-changes'
import { toSourceDto } from './to-source-dto'

export type CreateSourceOptions = { db: Db; input: CreateSourceInput; actor: string; config?: Config } & SourceChangeOptions

export async function createSource({ db, input, actor, sourcesChanged, config = getConfig() }: CreateSourceOptions): Promise<SourceDto> {
  const row = newSourceRow(input)
  const existing = await findSourceByQueue({ prisma: db.prisma, vhost: row.vhost, queue: row.queue })
  if (existing) {
    throw new AppError('conflict', input.kind === 'jetstream' ? `JetStream source "${row.queue}" already exists` : `queue "${row.queue}" on vhost "${row.vhost}" is already a source`, { id: existing.id.toString() })
  }
  // A disabled source drains nothing yet; the check applies when it is enabled (updateSource).
  if (input.enabled !== false) {
    if (input.kind === 'jetstream') await assertJetStreamSourceExists({ config, stream: input.stream, consumer: input.consumer ?? null })
    else await assertDrainableQueue({ vhost: row.vhost, queue: row.queue, drainedBefore: false, confirmed: input.confirmNotWorkQueue === true })
  }
  const confirmed = input.kind !== 'jetstream' && input.confirmNotWorkQueue === true
  const source = await crudTransaction(db, async ({ prisma, sql }) => {
    const created = toSourceDto(await insertSource({ prisma, row }))
    await recordConfigChange({
      sql,
      actor,
      action: 'source.created',
      subject: { type: 'source', id: created.id },
      summary: `Added ${input.kind === 'jetstream' ? 'JetStream source' : 'source'} ${row.queue}${confirmed ? ' (confirmed not a work queue)' : ''}`,
      before: null,
      after: { ...created, confirmNotWorkQueue: confirmed },
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
