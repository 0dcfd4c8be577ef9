import 'server-only'
import { headers } from 'next/headers'
import { redirect } from 'next/navigation'
import { getConfig } from '@/lib/server/platform/config'
import { composition } from '@/lib/server/platform/process/composition'
import { FRONT_HEADERS, requestFacts } from '@/lib/server/platform/request-facts'
import { PERMISSIONS, type Permission } from '@/lib/shared/roles'
import type { SessionDto } from '@/lib/shared/schemas/user'
import { authenticate } from './authenticate'
import { describeSession } from './describe-session'
import { hasPermission, isSignedIn, permittedPatterns, type Principal, type SignedIn } from './principal'
import { sourceIdsForPatterns } from './source-access'

/** The caller of a page (server components), authenticated exactly as API routes are. */
export async function pagePrincipal(): Promise<Principal> {
  const h = await headers()
  const request = new Request('http://page.internal/', { headers: h })
  const db = await composition().db()
  try {
    return await authenticate(request, requestFacts(request), { db, config: getConfig() })
  } catch {
    return { kind: 'anonymous' }
  }
}

/** Where a signed-out visitor of this page goes: the sign-in page, coming back here afterwards. */
async function signInRedirect(): Promise<never> {
  const here = (await headers()).get(FRONT_HEADERS.url) ?? '/'
  redirect(`/sign-in?next=${encodeURIComponent(here)}`)
}

/**
 * For the pages of the dashboard: the signed-in caller and what the browser should know of them, or a redirect to
 * sign in. Pages hide what the role cannot do; the API refuses it anyway.
 */
export async function requirePageSession(permission: Permission = 'signed-in'): Promise<{ principal: SignedIn; session: SessionDto }> {
  const principal = await pagePrincipal()
  if (!isSignedIn(principal)) return signInRedirect()
  if (!hasPermission(principal, permission)) {
    throw Object.assign(new Error(`This page needs the ${permission} permission (${PERMISSIONS[permission]})`), { digest: 'forbidden' })
  }
  return { principal, session: await describePageSession(principal) }
}

/** What the browser should know of a page's caller (signed in or not) and of the sign-in methods. */
export async function describePageSession(principal: Principal): Promise<SessionDto> {
  return describeSession({ db: await composition().db(), config: getConfig(), principal })
}

/** Whether the signed-in caller of a page holds `permission` (the dashboard layout already required a sign-in). */
export async function pageAllows(permission: Permission): Promise<boolean> {
  return hasPermission(await pagePrincipal(), permission)
}

/** The sources whose data the page's caller may see with `permission` (null: every source), as API routes scope reads. */
export async function pageSourceIds(permission: Permission): Promise<string[] | null> {
  const principal = await pagePrincipal()
  return sourceIdsForPatterns({ sql: (await composition().db()).sql, patterns: permittedPatterns(principal, permission) })
}
