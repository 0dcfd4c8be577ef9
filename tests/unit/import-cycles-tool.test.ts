import { spawnSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

/**
 * tests/tools/import-cycles.mjs is the lint step that keeps the import graph acyclic (`npm run lint:cycles`), file by
 * file and room by room: it must see a cycle through a type-only import or a re-export, and pass a graph without one.
 */
const tool = path.resolve(import.meta.dirname, '../tools/import-cycles.mjs')
const root = mkdtempSync(path.join(tmpdir(), 'lazarus-cycles-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

function project(name: string, files: Record<string, string>): string {
  const dir = path.join(root, name)
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    writeFileSync(path.join(dir, file), text)
  }
  return dir
}

const run = (dir: string) => {
  const result = spawnSync(process.execPath, [tool, dir], { encoding: 'utf8' })
  return { code: result.status, out: result.stdout + result.stderr }
}

describe('the import cycle check', () => {
  it('passes an acyclic graph, and ignores packages and dynamic imports', () => {
    const dir = project('acyclic', {
      'a.ts': "import { b } from './b'\nimport { z } from 'zod'\nexport const a = () => [b, z]\n",
      'b.ts': "export const b = 1\nexport const later = () => import('./a')\n",
    })
    expect(run(dir)).toEqual({ code: 0, out: 'no import cycles in 2 modules\n' })
  })

  it('fails on a cycle, naming its modules, when one edge is a type-only import', () => {
    const dir = project('typed', {
      'a.ts': "import { b } from './b'\nexport type A = { n: number }\nexport const a = b\n",
      'b.ts': "import type { A } from './a'\nexport const b: A = { n: 1 }\n",
    })
    const { code, out } = run(dir)
    expect(code).toBe(1)
    expect(out).toMatch(/cycle among 2 modules: .*a\.ts, .*b\.ts/)
  })

  it('follows re-exports', () => {
    const dir = project('reexport', {
      'index.ts': "export * from './x'\n",
      'x.ts': "import { y } from './y'\nexport const x = y\n",
      'y.ts': "export { x as again } from './index'\nexport const y = 2\n",
    })
    const { code, out } = run(dir)
    expect(code).toBe(1)
    expect(out).toMatch(/cycle among 3 modules/)
  })
})
