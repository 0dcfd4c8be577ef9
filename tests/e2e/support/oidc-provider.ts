import { execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Provider from 'oidc-provider'

/**
 * A certificate authority made for this run, and a server certificate it signed for 127.0.0.1 (openssl, from
 * Debian's base system). Lazarus trusts the CA through NODE_EXTRA_CA_CERTS, never by switching its HTTPS checks off;
 * Chromium is told to accept exactly this server key (its SPKI hash).
 */
export type TestCa = { dir: string; caFile: string; key: Buffer; cert: Buffer; spkiSha256: string }

export function makeTestCa(): TestCa {
  const dir = mkdtempSync(path.join(tmpdir(), 'lazarus-ca-'))
  const f = (name: string) => path.join(dir, name)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] })
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '1', '-subj', '/CN=Lazarus test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign')
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('leaf.key'), '-out', f('leaf.csr'), '-subj', '/CN=127.0.0.1')
  writeFileSync(f('leaf.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n')
  openssl('x509', '-req', '-in', f('leaf.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('leaf.pem'), '-days', '1', '-extfile', f('leaf.ext'))
  const pub = openssl('x509', '-in', f('leaf.pem'), '-pubkey', '-noout')
  const der = execFileSync('openssl', ['pkey', '-pubin', '-outform', 'der'], { input: pub })
  const spkiSha256 = execFileSync('openssl', ['dgst', '-sha256', '-binary'], { input: der }).toString('base64')
  return { dir, caFile: f('ca.pem'), key: readFileSync(f('leaf.key')), cert: readFileSync(f('leaf.pem')), spkiSha256 }
}

export type TestAccount = { email: string; name: string; groups: string[] }

export type TestOidcProvider = { issuer: string; clientId: string; clientSecret: string; close(): Promise<void> }

/**
 * A real OpenID Connect provider (panva's oidc-provider) on loopback HTTPS, with its development login form: any
 * password signs an account in by its login name. Accounts carry e-mail and groups claims (served from userinfo).
 */
export async function startOidcProvider({ ca, redirectUri, accounts }: { ca: TestCa; redirectUri: string; accounts: Record<string, TestAccount> }): Promise<TestOidcProvider> {
  const server: Server = createServer({ key: ca.key, cert: ca.cert })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
  const clientId = 'lazarus-e2e'
  const clientSecret = 'lazarus-e2e-client-secret-0123456789'
  const provider = new Provider(issuer, {
    clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }],
    claims: { openid: ['sub'], email: ['email'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    cookies: { keys: ['lazarus-e2e-cookie-key'] },
    features: { devInteractions: { enabled: true } },
    findAccount: async (_ctx: unknown, id: string) => {
      const account = accounts[id]
      if (!account) return undefined
      return { accountId: id, claims: async () => ({ sub: id, email: account.email, name: account.name, groups: account.groups }) }
    },
  } as never)
  server.on('request', provider.callback())
  return {
    issuer,
    clientId,
    clientSecret,
    close: () => new Promise<void>((resolve) => server!.close(() => resolve())),
  }
}
