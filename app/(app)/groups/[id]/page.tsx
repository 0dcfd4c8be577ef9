import type { Metadata } from 'next'
import { notFound } from 'next/navigation'
import { Suspense } from 'react'
import { GroupDetail } from '@/components/groups/group-detail'
import { pageSourceIds } from '@/lib/server/auth/page-principal'
import { getGroupTitle } from '@/lib/server/groups/get-group-title'
import { composition } from '@/lib/server/platform/process/composition'
import { pageIdSchema } from '@/lib/shared/page-params'

export const dynamic = 'force-dynamic'

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  return { title: await getGroupTitle({ db: await composition().db(), id: (await params).id, sourceIds: await pageSourceIds('messages:read') }) }
}

export default async function GroupPage({ params }: { params: Promise<{ id: string }> }) {
  const id = pageIdSchema.safeParse((await params).id)
  if (!id.success) notFound()
  return (
    <Suspense>
      <GroupDetail id={id.data} />
    </Suspense>
  )
}
