import 'server-only'
import { getDb } from '@/lib/server/db'
import { AppError, notFound } from '@/lib/server/errors/app-error'
import { parseId } from '@/lib/server/http/parse-id'

/** Removes a source that stored nothing; one with dead letters is only disabled, never deleted with its data. */
export async function deleteSource({ id }: { id: string }): Promise<{ id: string; deleted: true }> {
  const { prisma } = await getDb()
  const sourceId = parseId(id, 'source')
  const existing = await prisma.source.findUnique({ where: { id: sourceId } })
  if (!existing) throw notFound(`source ${id}`)
  const stored = await prisma.deadLetter.count({ where: { sourceId } })
  if (stored > 0) {
    throw new AppError('conflict', `source ${id} holds ${stored} stored dead letters; disable it with PATCH {"enabled": false} instead`)
  }
  await prisma.source.delete({ where: { id: sourceId } })
  return { id, deleted: true }
}
