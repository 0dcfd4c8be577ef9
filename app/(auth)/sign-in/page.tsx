import type { Metadata } from 'next'
import { redirect } from 'next/navigation'
import { SignInForm } from '@/components/auth/sign-in-form'
import { describeSession } from '@/lib/server/auth/describe-session'
import { safeReturnTo } from '@/lib/server/auth/oidc'
import { pagePrincipal } from '@/lib/server/auth/page-principal'
import { isSignedIn } from '@/lib/server/auth/principal'
import { getConfig } from '@/lib/server/platform/config'
import { getDb } from '@/lib/server/platform/db'

export const metadata: Metadata = { title: 'Sign in' }

export default async function SignInPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams
  const next = safeReturnTo(typeof params.next === 'string' ? params.next : '/')
  const principal = await pagePrincipal()
  if (isSignedIn(principal)) redirect(next)
  const session = await describeSession({ db: await getDb(), config: getConfig(), principal })
  const error = typeof params.error === 'string' ? params.error.slice(0, 300) : null
  return <SignInForm methods={session.methods} needsSetup={session.needsSetup} next={next} error={error} expired={params.expired === '1'} />
}
