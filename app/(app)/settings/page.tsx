import type { Metadata } from 'next'
import { Forbidden } from '@/components/auth/forbidden'
import { SettingsPage } from '@/components/settings/settings-page'
import { pageAllows } from '@/lib/server/auth/page-principal'

export const dynamic = 'force-dynamic'
export const metadata: Metadata = { title: 'Settings' }

export default async function Page() {
  if (!(await pageAllows('admin'))) return <Forbidden permission="admin" />
  return <SettingsPage />
}
