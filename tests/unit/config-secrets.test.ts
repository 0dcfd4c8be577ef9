import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { listenAddress, unsafeListenProblems } from '@/lib/cli/listen'
import { ConfigError, parseConfig } from '@/lib/server/platform/config'

describe('secrets and sign-in configuration', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lazarus-secrets-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const file = (name: string, content: string) => {
    const p = path.join(dir, name)
    writeFileSync(p, content)
    return p
  }

  it('every secret variable can come from a _FILE (Docker and Kubernetes secrets), trailing newline dropped', () => {
    const config = parseConfig({
      LAZARUS_ADMIN_TOKEN_FILE: file('token', 'a'.repeat(40) + '\n'),
      LAZARUS_OIDC_CLIENT_SECRET_FILE: file('oidc', 's3cret\n'),
      DATABASE_URL_FILE: file('db', 'postgres://app:pw@db/lazarus\n'),
      LAZARUS_ADMIN_PASSWORD_FILE: file('pw', 'correct horse battery'),
    })
    expect(config.LAZARUS_ADMIN_TOKEN).toBe('a'.repeat(40))
    expect(config.LAZARUS_OIDC_CLIENT_SECRET).toBe('s3cret')
    expect(config.DATABASE_URL).toBe('postgres://app:pw@db/lazarus')
    expect(config.LAZARUS_ADMIN_PASSWORD).toBe('correct horse battery')
  })

  it('refuses both forms at once, and a file that cannot be read, naming the variable', () => {
    expect(() => parseConfig({ LAZARUS_ADMIN_TOKEN: 'b'.repeat(40), LAZARUS_ADMIN_TOKEN_FILE: file('t2', 'c'.repeat(40)) })).toThrow(/LAZARUS_ADMIN_TOKEN: set either/)
    expect(() => parseConfig({ LAZARUS_ADMIN_TOKEN_FILE: path.join(dir, 'missing') })).toThrow(ConfigError)
  })

  it('validates the sign-in variables', () => {
    expect(() => parseConfig({ LAZARUS_ADMIN_PASSWORD: 'short' })).toThrow(/LAZARUS_ADMIN_PASSWORD/)
    expect(() => parseConfig({ LAZARUS_ADMIN_TOKEN: 'short' })).toThrow(/LAZARUS_ADMIN_TOKEN/)
    expect(() => parseConfig({ LAZARUS_OIDC_ISSUER: 'http://login.example.com' })).toThrow(/LAZARUS_OIDC_ISSUER/)
    expect(() => parseConfig({ LAZARUS_TRUSTED_PROXIES: '10.0.0.0/8, not-an-ip' })).toThrow(/LAZARUS_TRUSTED_PROXIES/)
    expect(() => parseConfig({ LAZARUS_GROUP_ROLES: 'sre=root' })).toThrow(/LAZARUS_GROUP_ROLES/)
    expect(parseConfig({ LAZARUS_TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.7' }).LAZARUS_TRUSTED_PROXIES).toEqual(['10.0.0.0/8', '192.168.1.7'])
  })

  it('listening beyond loopback needs a public URL, a real database and a way to sign in', async () => {
    expect(listenAddress('build-host-17')).toBe('127.0.0.1')
    expect(listenAddress('0.0.0.0')).toBe('0.0.0.0')
    expect(await unsafeListenProblems({ hostname: '127.0.0.1', config: parseConfig({}) })).toEqual([])
    const bare = await unsafeListenProblems({ hostname: '0.0.0.0', config: parseConfig({}) })
    expect(bare.map((p) => p.split(' ')[0])).toEqual(['LAZARUS_PUBLIC_URL', 'DATABASE_URL', 'a'])
    const ready = await unsafeListenProblems({
      hostname: '0.0.0.0',
      config: parseConfig({
        LAZARUS_PUBLIC_URL: 'https://lazarus.example.com',
        DATABASE_URL: 'postgres://db/lazarus',
        LAZARUS_OIDC_ISSUER: 'https://login.example.com',
        LAZARUS_OIDC_CLIENT_ID: 'lazarus',
      }),
    })
    expect(ready).toEqual([])
  })
})
