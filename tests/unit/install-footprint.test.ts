import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'

/*
 * `npm ci` on Node 20.19+ (the README's requirement) installs nothing that wants a newer Node (issue 16, defect 20):
 * @prisma/streams-local, which only `prisma dev` loads and which needs Node 22, is replaced by the stub in
 * prisma/streams-local-stub through package.json's overrides.
 */
const require = createRequire(import.meta.url)
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string }; overrides: Record<string, unknown> }

describe('install footprint', () => {
  it('the installed @prisma/streams-local is the stub, and every installed package accepts Node 20.19', () => {
    expect(pkg.engines.node).toBe('>=20.19')
    const installed = JSON.parse(readFileSync(require.resolve('@prisma/streams-local/package.json'), 'utf8')) as { version: string }
    expect(installed.version).toBe('0.0.0-lazarus')
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { engines?: { node?: string } }> }
    // A range whose every alternative starts at a major above 20 (">=22", "^22.12 || >=24") shuts Node 20 out.
    const lowestMajors = (range: string) => range.split('||').map((alt) => Number(/\d+/.exec(alt)?.[0] ?? 0))
    const wantsNewerNode = Object.entries(lock.packages)
      .filter(([, p]) => p.engines?.node && lowestMajors(p.engines.node).every((major) => major > 20))
      .map(([name, p]) => `${name} ${p.engines!.node}`)
    expect(wantsNewerNode).toEqual([])
  })
})
