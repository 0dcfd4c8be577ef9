import type { Metadata } from 'next'
import { BuilderPage } from '@/components/topology/builder-page'

export const dynamic = 'force-dynamic'
export const metadata: Metadata = { title: 'Three-tier builder' }

export default function Page() {
  return <BuilderPage />
}
