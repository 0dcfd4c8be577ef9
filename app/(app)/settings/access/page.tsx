import type { Metadata } from 'next'
import { AccessPage } from '@/components/access/access-page'

export const dynamic = 'force-dynamic'
export const metadata: Metadata = { title: 'Access' }

export default function Page() {
  return <AccessPage />
}
