import { Suspense } from 'react'
import { GroupsHome } from '@/components/groups/groups-home'

export const dynamic = 'force-dynamic'

export default function GroupsPage() {
  return (
    <Suspense>
      <GroupsHome />
    </Suspense>
  )
}
