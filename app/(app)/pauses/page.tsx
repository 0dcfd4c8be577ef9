import type { Metadata } from 'next'
import { Suspense } from 'react'
import { PausesPage } from '@/components/pauses/pauses-page'

export const dynamic = 'force-dynamic'
export const metadata: Metadata = { title: 'Pauses' }

export default function Page() {
  return (
    <Suspense>
      <PausesPage />
    </Suspense>
  )
}
