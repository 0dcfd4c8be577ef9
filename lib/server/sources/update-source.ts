import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import type { SourceDto, UpdateSourceInput } from '@/lib/shared/schemas/source'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { assertDrainableQueue } from './check-source-queue'
import { assertJetStreamSourceExists } from './check-jetstream-source'
import { getConfig, type Config } from '@/lib/server/platform/config'
import { findSource, updateSourceColumns } from './sources-store'
import { APPLY_WAIT_MS, type SourceChangeOptions } from './source-changes'
import { toSourceDto } from './to-source-dto'

export type UpdateSourceOptions = { db: Db; id: string; input: UpdateSourceInput; actor: string; config?: Config } & SourceChangeOptions

export async function updateSource({ db, id, input, actor, sourcesChanged, config }: UpdateSourceOptions): Promise<SourceDto> {
  const sourceId = parseId(id, 'source')
  const existing = await findSource({ prisma: db.prisma, id: sourceId })
  if (!existing) throw notFound(`source ${id}`)
  if (input.removeAfterCapture === true && existing.kind !== 'jetstream') {
    throw new AppError('unprocessable', `source ${existing.queue} is not a JetStream source: only a JetStream stream's captured messages can be removed after capture (docs/jetstream.md#removing-captured-messages)`)
  }
  // Enabling starts a drain: the same check as creating a source (the hold queue is Lazarus' own).
  if (input.enabled === true && !existing.enabled && existing.kind === 'jetstream' && existing.stream !== null) {
    await assertJetStreamSourceExists({ config: config ?? getConfig(), stream: existing.stream, consumer: existing.consumer })
  } else if (input.enabled === true && !existing.enabled && existing.kind !== 'hold') {
    await assertDrainableQueue({
      vhost: existing.vhost,
      queue: existing.queue,
      drainedBefore: existing.drainedCount > 0n || existing.lastDrainAt !== null,
      confirmed: input.confirmNotWorkQueue === true,
    })
  }
  const updated = await crudTransaction(db, async ({ prisma, sql }) => {
    const after = toSourceDto(await updateSourceColumns({ prisma, id: sourceId, input }))
    await recordConfigChange({
      sql,
      actor,
      action: 'source.updated',
      subject: { type: 'source', id: after.id },
      summary: `Changed source ${after.queue}: ${Object.keys(input).filter((k) => k !== 'confirmNotWorkQueue').join(', ')}`,
      before: toSourceDto(existing),
      after,
    })
    return after
  })
  await sourcesChanged?.notifyAndWait(APPLY_WAIT_MS)
  return updated
}
