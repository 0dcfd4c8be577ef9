import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'

/**
 * Two processes on one embedded database (DATABASE_URL unset): the second must say who holds it and exit non-zero,
 * not abort inside PGlite (docs/ARCHITECTURE.md#processes). A lock left by a dead process is taken over.
 */
const root = path.resolve(import.meta.dirname, '../..')
const child = path.resolve(import.meta.dirname, 'data-dir-lock-child.ts')
const env = (dataDir: string) => {
  const copy: NodeJS.ProcessEnv = { ...process.env, LAZARUS_DATA_DIR: dataDir, LAZARUS_LOG_LEVEL: 'info' }
  delete copy.DATABASE_URL
  return copy
}
const node = (args: string[], dataDir: string) =>
  spawn(process.execPath, args, { cwd: root, env: env(dataDir), stdio: ['ignore', 'pipe', 'pipe'] })
const tsx = (args: string[], dataDir: string) => node(['--conditions=react-server', '--import', 'tsx', ...args], dataDir)

async function holder(dataDir: string): Promise<ChildProcess> {
  const proc = tsx([child, dataDir], dataDir)
  let out = ''
  proc.stderr!.on('data', (chunk) => (out += chunk))
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve())
    proc.on('exit', (code) => reject(new Error(`holder exited ${code}: ${out}`)))
  })
  return proc
}

async function finish(proc: ChildProcess): Promise<{ code: number | null; output: string }> {
  let output = ''
  proc.stdout!.on('data', (chunk) => (output += chunk))
  proc.stderr!.on('data', (chunk) => (output += chunk))
  const [code] = await once(proc, 'exit')
  return { code, output }
}

describe('one embedded database, two processes', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  // One data directory made and migrated once, copied for each test: the lock is taken before the database opens, and
  // initdb with every migration costs PGlite a quarter of a minute of WebAssembly per copy.
  let template: string
  beforeAll(async () => {
    template = await mkdtemp(path.join(tmpdir(), 'lazarus-lock-template-'))
    const { openDb } = await import('@/lib/server/platform/db')
    await (await openDb({ dataDir: template })).close()
  })
  afterAll(() => rm(template, { recursive: true, force: true }))
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step()
  })
  const tempDir = async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'lazarus-lock-'))
    cleanup.push(() => rm(dir, { recursive: true, force: true }))
    await cp(template, dir, { recursive: true })
    return dir
  }

  it('a second `npm start` names the process that holds the data and exits non-zero', async () => {
    const dataDir = await tempDir()
    const first = await holder(dataDir)
    cleanup.push(async () => {
      first.kill('SIGKILL')
      await once(first, 'exit').catch(() => undefined)
    })
    expect((await readFile(path.join(dataDir, 'lazarus.pid'), 'utf8')).trim()).toBe(String(first.pid))

    // `npm start` runs the built server (lib/build/bundle-processes.mjs), which opens the database before anything else.
    const second = await finish(node([path.join(inject('processBundles'), 'serve.mjs')], dataDir))
    expect(second.code).not.toBe(0)
    expect(second.output).toContain(`another Lazarus (pid ${first.pid}) is using ${dataDir}; stop it or set DATABASE_URL`)
    expect(second.output).not.toContain('Aborted()')
  })

  it('takes over a lock left by a process that died, and gives it back on close', async () => {
    const dataDir = await tempDir()
    const dead = spawn(process.execPath, ['-e', ''])
    await once(dead, 'exit')
    await writeFile(path.join(dataDir, 'lazarus.pid'), `${dead.pid}\n`)

    const proc = await holder(dataDir)
    expect((await readFile(path.join(dataDir, 'lazarus.pid'), 'utf8')).trim()).toBe(String(proc.pid))
    proc.kill('SIGKILL')
    await once(proc, 'exit')
    // Killed without closing: the lock stays behind, stale, and the next process takes it.
    const next = await holder(dataDir)
    expect((await readFile(path.join(dataDir, 'lazarus.pid'), 'utf8')).trim()).toBe(String(next.pid))
    next.kill('SIGKILL')
    await once(next, 'exit')
  })

  it('closing the database removes the lock', async () => {
    const dataDir = await tempDir()
    const { openDb } = await import('@/lib/server/platform/db')
    const db = await openDb({ dataDir })
    expect(existsSync(path.join(dataDir, 'lazarus.pid'))).toBe(true)
    await db.close()
    expect(existsSync(path.join(dataDir, 'lazarus.pid'))).toBe(false)
  })
})
