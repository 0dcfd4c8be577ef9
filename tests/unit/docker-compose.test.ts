import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { parse } from 'yaml'
import { ENVIRONMENT_VARIABLES, SECRET_VARIABLES } from '@/lib/server/platform/config'
import { PROCESS_ENTRIES } from '@/lib/build/bundle-processes.mjs'

/**
 * docker-compose.yml (docs/operations.md#docker-compose), checked without Docker: its production profile runs the
 * image of ./Dockerfile as one web and one worker, with secrets as files of declared compose secrets and only
 * variables Lazarus reads; the development service stays for contributors.
 */
type Service = {
  profiles?: string[]
  build?: string
  image?: string
  command?: string[] | string
  environment?: Record<string, string>
  secrets?: string[]
  read_only?: boolean
}
const compose = parse(readFileSync(path.resolve(import.meta.dirname, '../../docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>
  secrets: Record<string, { file: string }>
}
const production = Object.entries(compose.services).filter(([, s]) => s.profiles?.includes('production'))

describe('docker-compose.yml', () => {
  it('runs one web and one worker of the image built from ./Dockerfile, read-only', () => {
    const { web, worker } = compose.services
    expect(production.map(([name]) => name).sort()).toEqual(['web', 'worker'])
    expect(web.build).toBe('.')
    expect(worker.image).toBe(web.image)
    expect(web.command).toBeUndefined()
    expect(worker.command).toEqual(['dist/worker.mjs'])
    expect(Object.keys(PROCESS_ENTRIES)).toContain('worker')
    expect(web.environment?.LAZARUS_RUN_WORKERS).toBe('0')
    for (const [, service] of production) expect(service.read_only).toBe(true)
  })

  it('gives secrets only as files of declared secrets, and sets only variables Lazarus reads', () => {
    for (const [name, service] of production) {
      for (const [variable, value] of Object.entries(service.environment ?? {})) {
        expect(ENVIRONMENT_VARIABLES, `${name} sets ${variable}`).toContain(variable)
        expect(SECRET_VARIABLES as readonly string[], `${name} sets the secret ${variable} inline`).not.toContain(variable)
        if (!variable.endsWith('_FILE')) continue
        const secret = value.replace(/^\/run\/secrets\//, '')
        expect(service.secrets, `${name}: ${variable} reads a secret it is not given`).toContain(secret)
        expect(compose.secrets[secret]?.file).toMatch(/^\.\/deploy\/compose\/secrets\//)
      }
    }
  })

  it('keeps the development service, on the Node version CI tests with', () => {
    expect(compose.services.lazarus.profiles).toEqual(['dev'])
    expect(compose.services.lazarus.image).toBe(`node:${process.versions.node}-bookworm`)
  })
})
