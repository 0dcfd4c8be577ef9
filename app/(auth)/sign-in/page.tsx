import type { Metadata } from 'next'
import { redirect } from 'next/navigation'
import { SignInForm } from '@/components/auth/sign-in-form'
import { safeReturnTo } from '@/lib/server/auth/oidc'
import { describePageSession, pagePrincipal } from '@/lib/server/auth/page-principal'
import { isSignedIn } from '@/lib/server/auth/principal'

export const metadata: Metadata = { title: 'Sign in' }

export default async function SignInPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams
  const next = safeReturnTo(typeof params.next === 'string' ? params.next : '/')
  const principal = await pagePrincipal()
  if (isSignedIn(principal)) redirect(next)
  const session = await describePageSession(principal)
  const error = typeof params.error === 'string' ? params.error.slice(0, 300) : null
  return <SignInForm methods={session.methods} needsSetup={session.needsSetup} next={next} error={error} expired={params.expired === '1'} />
}
