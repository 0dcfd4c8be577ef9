import 'server-only'
import * as client from 'openid-client'
import type { Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { logger } from '@/lib/server/platform/log'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { saveOidcFlow, takeOidcFlow } from './auth-store'
import { upsertExternalUser } from './external-users'
import { bindingsForGroups } from '@/lib/shared/group-roles'
import { newSecret, secretHash } from './secret-token'
import { startSession, type SignInResult } from './sign-in'

const log = logger('oidc')

/** A sign-in must come back from the provider within this long. */
const FLOW_MINUTES = 10

export const OIDC_CALLBACK_PATH = '/api/auth/oidc/callback'

export function oidcEnabled(config: Config): boolean {
  return Boolean(config.LAZARUS_OIDC_ISSUER && config.LAZARUS_OIDC_CLIENT_ID)
}

/**
 * The provider's configuration, discovered once per process (openid-client: authorization code flow with PKCE;
 * it refuses plain-http issuers, so a provider's certificate is always checked — a private CA goes into
 * NODE_EXTRA_CA_CERTS). A failed discovery is retried on the next sign-in.
 */
let discovered: { key: string; config: Promise<client.Configuration> } | undefined

function providerConfig(config: Config): Promise<client.Configuration> {
  if (!oidcEnabled(config)) throw new AppError('not_found', 'Single sign-on is not configured')
  const key = `${config.LAZARUS_OIDC_ISSUER}|${config.LAZARUS_OIDC_CLIENT_ID}`
  if (discovered?.key !== key) {
    const auth = config.LAZARUS_OIDC_CLIENT_SECRET ? client.ClientSecretBasic(config.LAZARUS_OIDC_CLIENT_SECRET) : client.None()
    const promise = client
      .discovery(new URL(config.LAZARUS_OIDC_ISSUER!), config.LAZARUS_OIDC_CLIENT_ID!, undefined, auth, { timeout: 10 })
      .catch((error: unknown) => {
        discovered = undefined
        log.error('discovery failed', { issuer: config.LAZARUS_OIDC_ISSUER, error: (error as Error).message })
        throw new AppError('unavailable', 'The single sign-on provider cannot be reached; try again, or sign in with a password')
      })
    discovered = { key, config: promise }
  }
  return discovered.config
}

/** Only paths of this Lazarus are places to return to after sign-in (no open redirect). */
export function safeReturnTo(value: string | null | undefined): string {
  if (!value || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\') || value.length > 2000) return '/'
  return /[\u0000-\u001f\u007f]/.test(value) ? '/' : value
}

export type StartOidcOptions = { db: Db; config: Config; origin: string; returnTo: string }

/**
 * Starts a sign-in: remembers state, nonce and the PKCE verifier server-side for ten minutes, bound to this browser
 * by the returned cookie value, and returns the provider's authorization URL to redirect to.
 */
export async function startOidcSignIn({ db, config, origin, returnTo }: StartOidcOptions): Promise<{ url: string; browserSecret: string }> {
  const provider = await providerConfig(config)
  const verifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const nonce = client.randomNonce()
  const browserSecret = newSecret()
  await saveOidcFlow({
    sql: db.sql,
    flow: { state, browserHash: secretHash(browserSecret), nonce, codeVerifier: verifier, returnTo: safeReturnTo(returnTo) },
    minutes: FLOW_MINUTES,
  })
  const url = client.buildAuthorizationUrl(provider, {
    redirect_uri: origin + OIDC_CALLBACK_PATH,
    scope: config.LAZARUS_OIDC_SCOPES,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  })
  return { url: url.href, browserSecret }
}

export type FinishOidcOptions = {
  db: Db
  config: Config
  origin: string
  /** The callback's path and query as the browser sent them. */
  pathAndQuery: string
  browserSecret: string | null
  ip: string
  userAgent: string | null
}

function groupsFrom(claims: Record<string, unknown>, claim: string): string[] {
  const value = claims[claim]
  if (Array.isArray(value)) return value.filter((g): g is string => typeof g === 'string')
  if (typeof value === 'string') return value.split(',').map((g) => g.trim()).filter(Boolean)
  return []
}

/**
 * Completes a sign-in at the callback: checks state (and that this browser started the flow), exchanges the code
 * with the PKCE verifier, validates the ID token (signature, issuer, audience, nonce, expiry), maps the groups claim
 * to roles and starts a session. A user whose groups give no role is refused.
 */
export async function finishOidcSignIn(options: FinishOidcOptions): Promise<SignInResult & { returnTo: string }> {
  const { db, config } = options
  const provider = await providerConfig(config)
  const currentUrl = new URL(options.pathAndQuery, options.origin)
  const state = currentUrl.searchParams.get('state') ?? ''
  const flow = await takeOidcFlow({ sql: db.sql, state })
  if (!flow || !options.browserSecret || !secretHash(options.browserSecret).equals(flow.browserHash)) {
    throw new AppError('forbidden', 'This sign-in was not started in this browser, or took longer than 10 minutes; sign in again')
  }
  let claims: Record<string, unknown>
  let accessToken: string
  try {
    const tokens = await client.authorizationCodeGrant(provider, currentUrl, {
      pkceCodeVerifier: flow.codeVerifier,
      expectedState: state,
      expectedNonce: flow.nonce,
      idTokenExpected: true,
    })
    claims = (tokens.claims() ?? {}) as Record<string, unknown>
    accessToken = tokens.access_token
  } catch (error) {
    log.warn('sign-in refused by the provider or its answer did not validate', { error: (error as Error).message })
    throw new AppError('forbidden', 'Single sign-on failed; try again')
  }
  let groups = groupsFrom(claims, config.LAZARUS_OIDC_GROUPS_CLAIM)
  let email = typeof claims.email === 'string' ? claims.email : null
  if (groups.length === 0 || !email) {
    // Many providers put groups (and sometimes the address) only in the userinfo response.
    // Without it the sign-in goes on with the ID token's claims, and is refused below if they do not say enough.
    const info = (await client.fetchUserInfo(provider, accessToken, claims.sub as string).catch((error: unknown) => {
      log.warn('userinfo request failed; using the ID token\'s claims alone', { error: (error as Error).message })
      return {}
    })) as Record<string, unknown>
    if (groups.length === 0) groups = groupsFrom(info, config.LAZARUS_OIDC_GROUPS_CLAIM)
    email ??= typeof info.email === 'string' ? info.email : null
  }
  if (!email) throw new AppError('forbidden', 'The provider did not say who you are (no email claim); ask for the email scope')
  const groupBindings = bindingsForGroups(groups, config.LAZARUS_GROUP_ROLES)
  const user = await upsertExternalUser({
    sql: db.sql,
    identity: {
      email,
      displayName: typeof claims.name === 'string' ? claims.name : null,
      source: 'oidc',
      oidc: { issuer: config.LAZARUS_OIDC_ISSUER!, subject: String(claims.sub) },
      groupBindings,
    },
  })
  if (user.disabled || user.bindings.length === 0) {
    await db.sql.transaction((tx) =>
      recordAudit({
        sql: tx,
        actor: email!,
        action: 'auth.sign-in-failed',
        subject: { type: 'user', id: user.id },
        summary: `Single sign-on refused for ${email}: ${user.disabled ? 'the account is disabled' : 'no group gives a role'}`,
        details: { ip: options.ip, groups },
      }),
    )
    throw new AppError('forbidden', user.disabled ? 'This account is disabled' : 'You are signed in at the provider, but none of your groups gives a role in Lazarus; ask an admin')
  }
  const session = await startSession({ db, config, userId: user.id, email, method: 'oidc', ip: options.ip, userAgent: options.userAgent })
  return { ...session, returnTo: flow.returnTo }
}
