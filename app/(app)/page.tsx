import type { Metadata } from 'next'
import { Suspense } from 'react'
import { GroupsHome } from '@/components/groups/groups-home'

export const dynamic = 'force-dynamic'
export const metadata: Metadata = { title: 'Error groups' }

export default function GroupsPage() {
  return (
    <Suspense>
      <GroupsHome />
    </Suspense>
  )
}
