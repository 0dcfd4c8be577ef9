import 'server-only'
import type { Prisma } from '@/lib/generated/prisma/client'
import type { SavedViewDto } from '@/lib/shared/schemas/saved-view'

/** Saved views through Prisma (plain CRUD, docs/decisions/0012). `prisma` is the client or a CRUD transaction's. */
type ViewsPrisma = { prisma: Prisma.TransactionClient }

type ViewRow = { id: bigint; name: string; query: string; createdAt: Date; updatedAt: Date }

const toSavedViewDto = (v: ViewRow): SavedViewDto => ({
  id: v.id.toString(),
  name: v.name,
  query: v.query,
  createdAt: v.createdAt.toISOString(),
  updatedAt: v.updatedAt.toISOString(),
})

export async function listViewsOf({ prisma, userId, limit }: ViewsPrisma & { userId: string; limit: number }): Promise<SavedViewDto[]> {
  const rows = await prisma.savedView.findMany({ where: { userId: BigInt(userId) }, orderBy: [{ name: 'asc' }, { id: 'asc' }], take: limit })
  return rows.map(toSavedViewDto)
}

export async function countViewsOf({ prisma, userId }: ViewsPrisma & { userId: string }): Promise<number> {
  return prisma.savedView.count({ where: { userId: BigInt(userId) } })
}

export async function hasViewNamed({ prisma, userId, name }: ViewsPrisma & { userId: string; name: string }): Promise<boolean> {
  return (await prisma.savedView.findUnique({ where: { userId_name: { userId: BigInt(userId), name } }, select: { id: true } })) !== null
}

/** Creates the view, or replaces the query of the user's view of that name. */
export async function upsertView({ prisma, userId, name, query }: ViewsPrisma & { userId: string; name: string; query: string }): Promise<SavedViewDto> {
  const row = await prisma.savedView.upsert({
    where: { userId_name: { userId: BigInt(userId), name } },
    create: { userId: BigInt(userId), name, query },
    update: { query, updatedAt: new Date() },
  })
  return toSavedViewDto(row)
}

/** Deletes the user's view `id`; false when they have none of that id. */
export async function deleteViewOf({ prisma, userId, id }: ViewsPrisma & { userId: string; id: string }): Promise<boolean> {
  const { count } = await prisma.savedView.deleteMany({ where: { id: BigInt(id), userId: BigInt(userId) } })
  return count > 0
}
