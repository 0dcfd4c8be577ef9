import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { PRODUCTION_NODE_FLAGS } from '@/lib/bench/bench-support'

const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts

describe('benches run their measured process as production does', () => {
  it.each(['start', 'worker'])('npm run %s uses the V8 flags and MALLOC_ARENA_MAX the benches give their measured processes', (script) => {
    const command = scripts[script]
    // The node invocation that runs the built process (ensure-build runs first, with no flags).
    const run = command.slice(command.lastIndexOf('node '))
    const flags = run.split(/\s+/).filter((word) => word.startsWith('--'))
    expect(flags).toEqual(PRODUCTION_NODE_FLAGS)
    expect(command).toContain('MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2}')
  })
})
