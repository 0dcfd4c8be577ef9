import type { Metadata } from 'next'
import { Suspense } from 'react'
import { TopologyPage } from '@/components/topology/topology-page'

export const dynamic = 'force-dynamic'
export const metadata: Metadata = { title: 'Topology' }

export default function Page() {
  return (
    <Suspense>
      <TopologyPage />
    </Suspense>
  )
}
