import type { Metadata } from 'next'
import { Suspense } from 'react'
import { ReplaysPage } from '@/components/replays/replays-page'

export const dynamic = 'force-dynamic'
export const metadata: Metadata = { title: 'Replays' }

export default function Page() {
  return (
    <Suspense>
      <ReplaysPage />
    </Suspense>
  )
}
