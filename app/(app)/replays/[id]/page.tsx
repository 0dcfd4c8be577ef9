import type { Metadata } from 'next'
import { notFound } from 'next/navigation'
import { Suspense } from 'react'
import { ReplayDetail } from '@/components/replays/replay-detail'
import { pageIdSchema } from '@/lib/shared/page-params'

export const dynamic = 'force-dynamic'

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  const id = pageIdSchema.safeParse((await params).id)
  return { title: id.success ? `Replay #${id.data}` : 'Replay' }
}

export default async function ReplayPage({ params }: { params: Promise<{ id: string }> }) {
  const id = pageIdSchema.safeParse((await params).id)
  if (!id.success) notFound()
  return (
    <Suspense>
      <ReplayDetail id={id.data} />
    </Suspense>
  )
}
