import type { Metadata } from 'next'
import { notFound } from 'next/navigation'
import { MessageDetail } from '@/components/messages/message-detail'
import { pageSourceIds } from '@/lib/server/auth/page-principal'
import { getMessageTitle } from '@/lib/server/messages/get-message-title'
import { composition } from '@/lib/server/platform/process/composition'
import { pageIdSchema } from '@/lib/shared/page-params'

export const dynamic = 'force-dynamic'

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  return { title: await getMessageTitle({ db: await composition().db(), id: (await params).id, sourceIds: await pageSourceIds('messages:read') }) }
}

export default async function MessagePage({ params }: { params: Promise<{ id: string }> }) {
  const id = pageIdSchema.safeParse((await params).id)
  if (!id.success) notFound()
  return <MessageDetail id={id.data} />
}
