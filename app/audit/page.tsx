import type { Metadata } from 'next'
import { Suspense } from 'react'
import { AuditPage } from '@/components/audit/audit-page'

export const dynamic = 'force-dynamic'
export const metadata: Metadata = { title: 'Audit log' }

export default function Page() {
  return (
    <Suspense>
      <AuditPage />
    </Suspense>
  )
}
