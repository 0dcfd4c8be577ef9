import type { Metadata } from 'next'
import { notFound } from 'next/navigation'
import { MessageDetail } from '@/components/messages/message-detail'
import { pageIdSchema } from '@/lib/shared/page-params'

export const dynamic = 'force-dynamic'

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  const id = pageIdSchema.safeParse((await params).id)
  return { title: id.success ? `Message #${id.data}` : 'Message' }
}

export default async function MessagePage({ params }: { params: Promise<{ id: string }> }) {
  const id = pageIdSchema.safeParse((await params).id)
  if (!id.success) notFound()
  return <MessageDetail id={id.data} />
}
