import type { Metadata } from 'next'
import { Suspense } from 'react'
import { AuditPage } from '@/components/audit/audit-page'
import { Forbidden } from '@/components/auth/forbidden'
import { pageAllows } from '@/lib/server/auth/page-principal'

export const dynamic = 'force-dynamic'
export const metadata: Metadata = { title: 'Audit log' }

export default async function Page() {
  if (!(await pageAllows('audit:read'))) return <Forbidden permission="audit:read" />
  return (
    <Suspense>
      <AuditPage />
    </Suspense>
  )
}
