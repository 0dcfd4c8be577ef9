import type { Metadata } from 'next'
import { notFound } from 'next/navigation'
import { MessageEditor } from '@/components/messages/message-editor'
import { pageIdSchema } from '@/lib/shared/page-params'

export const dynamic = 'force-dynamic'

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  return { title: `Edit message #${(await params).id}` }
}

export default async function EditMessagePage({ params }: { params: Promise<{ id: string }> }) {
  const id = pageIdSchema.safeParse((await params).id)
  if (!id.success) notFound()
  return <MessageEditor id={id.data} />
}
