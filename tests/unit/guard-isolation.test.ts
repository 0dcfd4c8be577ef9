import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const packageDir = path.resolve(import.meta.dirname, '../../packages/guard')
const dir = path.join(packageDir, 'src')

/**
 * The guard runs inside applications, installed as the package @lazarus/guard: it may import only its own files and
 * Node built-ins at runtime, and amqplib for types (the application's own amqplib does the work through the
 * connection it passes). Its version is read from its own package.json, the one place it is written.
 */
describe('@lazarus/guard dependencies', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'))

  it('has files to check', () => expect(files).toEqual(expect.arrayContaining(['index.ts', 'guard.ts', 'entity-key.ts', 'registry.ts', 'protocol.ts'])))

  for (const file of files) {
    it(`${file} imports nothing from Next.js or Lazarus' server`, () => {
      const source = readFileSync(path.join(dir, file), 'utf8')
      const imports = [...source.matchAll(/^(import|export)\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)].map((m) => ({ typeOnly: Boolean(m[2]), from: m[3] }))
      expect(source).not.toMatch(/server-only|from 'next|@\/lib\/|require\(/)
      for (const { typeOnly, from } of imports) {
        const allowed = from.startsWith('./') || from.startsWith('node:') || (from === 'amqplib' && typeOnly) || (file === 'version.ts' && from === '../package.json')
        expect(allowed, `${file} imports ${typeOnly ? 'type ' : ''}${from}`).toBe(true)
      }
    })
  }

  it('installs nothing with it: amqplib is a peer dependency, and there are no others', () => {
    const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as Record<string, unknown>
    expect(manifest.dependencies).toBeUndefined()
    expect(manifest.peerDependencies).toEqual({ amqplib: expect.any(String) })
  })
})
