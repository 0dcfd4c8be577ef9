import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { countStoredMessages, deleteSourceAndCounters, findSource } from './sources-store'
import { APPLY_WAIT_MS, type SourceChangeOptions } from './source-changes'
import { toSourceDto } from './to-source-dto'

/** Removes a source that stored nothing; one with dead letters is only disabled, never deleted with its data. */
export type DeleteSourceOptions = { db: Db; id: string; actor: string } & SourceChangeOptions

export async function deleteSource({ db, id, actor, sourcesChanged }: DeleteSourceOptions): Promise<{ id: string; deleted: true }> {
  const sourceId = parseId(id, 'source')
  const deleted = await crudTransaction(db, async ({ prisma, sql }) => {
    const existing = await findSource({ prisma, id: sourceId })
    if (!existing) throw notFound(`source ${id}`)
    const stored = await countStoredMessages({ prisma, sourceId })
    if (stored > 0) {
      throw new AppError('conflict', `source ${id} holds ${stored} stored dead letters; disable it with PATCH {"enabled": false} instead`)
    }
    await deleteSourceAndCounters({ prisma, sql, id: sourceId })
    await recordConfigChange({ sql, actor, action: 'source.deleted', subject: { type: 'source', id }, summary: `Removed source ${existing.queue}`, before: toSourceDto(existing), after: null })
    return { id, deleted: true as const }
  })
  await sourcesChanged?.notifyAndWait(APPLY_WAIT_MS)
  return deleted
}
