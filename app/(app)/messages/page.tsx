import type { Metadata } from 'next'
import { Suspense } from 'react'
import { MessagesPage } from '@/components/messages/messages-page'

export const dynamic = 'force-dynamic'
export const metadata: Metadata = { title: 'Messages' }

export default function Page() {
  return (
    <Suspense>
      <MessagesPage />
    </Suspense>
  )
}
