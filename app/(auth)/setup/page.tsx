import type { Metadata } from 'next'
import { SetPasswordForm } from '@/components/auth/set-password-form'

export const metadata: Metadata = { title: 'Create the first admin' }

export default function SetupPage() {
  return <SetPasswordForm mode="setup" />
}
