import { notFound } from 'next/navigation'
import { Suspense } from 'react'
import { GroupDetail } from '@/components/groups/group-detail'
import { pageIdSchema } from '@/lib/shared/page-params'

export const dynamic = 'force-dynamic'

export default async function GroupPage({ params }: { params: Promise<{ id: string }> }) {
  const id = pageIdSchema.safeParse((await params).id)
  if (!id.success) notFound()
  return (
    <Suspense>
      <GroupDetail id={id.data} />
    </Suspense>
  )
}
