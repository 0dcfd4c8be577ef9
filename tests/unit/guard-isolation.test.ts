import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const dir = path.resolve(import.meta.dirname, '../../lib/guard')

/**
 * The guard runs inside applications: it may import only its own files and Node built-ins at runtime, and amqplib
 * for types (the application's own amqplib does the work through the connection it passes).
 */
describe('lib/guard dependencies', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'))

  it('has files to check', () => expect(files).toEqual(expect.arrayContaining(['index.ts', 'guard.ts', 'entity-key.ts', 'registry.ts', 'protocol.ts'])))

  for (const file of files) {
    it(`${file} imports nothing from Next.js or Lazarus' server`, () => {
      const source = readFileSync(path.join(dir, file), 'utf8')
      const imports = [...source.matchAll(/^(import|export)\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)].map((m) => ({ typeOnly: Boolean(m[2]), from: m[3] }))
      expect(source).not.toMatch(/server-only|from 'next|@\/lib\/server|require\(/)
      for (const { typeOnly, from } of imports) {
        const allowed = from.startsWith('./') || from.startsWith('node:') || (from === 'amqplib' && typeOnly)
        expect(allowed, `${file} imports ${typeOnly ? 'type ' : ''}${from}`).toBe(true)
      }
    })
  }
})
