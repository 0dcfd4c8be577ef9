import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { withOutput } from '../helpers/child-output'
import { AMQP_URL, brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { collect, deadLetterThrough, declareWorkTopology, deleteWorkTopology } from '../helpers/replay'
import { createEmptyPostgres } from '../helpers/engine-db'
import { freePort } from '../e2e/support/lazarus-server'

/**
 * The production build runs on its own (docs/operations.md#the-artifact): `npm run build`'s .next/standalone, copied
 * outside the repository so nothing can be resolved from it, migrates a database, serves the web UI and API, and its
 * worker drains and replays, all by plain `node` on built JavaScript: no tsx, no TypeScript, no dev dependency.
 * Runs after the build (tests/run-all.sh; `npm run test:artifact` builds first).
 */
const BUILD = path.resolve(import.meta.dirname, '../../.next/standalone')
const TOKEN = 'artifact-test-admin-token-0123456789abcdef'
const names = { exchange: uniqueName('artifact_ex'), key: 'orders', work: uniqueName('artifact_work'), dlq: uniqueName('artifact_dlq') }

let copy: string
// Empty: the build's own migrations runner creates the schema.
let database: { url: string; drop(): Promise<void> } | undefined
const processes: ChildProcess[] = []

function run(file: string, env: Record<string, string>): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, [path.join(copy, 'dist', file)], {
    cwd: copy,
    // Only what a container would set: no NODE_OPTIONS, no loader, no path back into the repository.
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', DATABASE_URL: database!.url, AMQP_URL, LAZARUS_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  processes.push(child)
  return withOutput(child)
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode
  child.kill('SIGTERM')
  const [code] = await once(child, 'exit')
  return code as number | null
}

describe('the production build, copied outside the repository', () => {
  beforeAll(async () => {
    if (!existsSync(path.join(BUILD, 'dist/serve.mjs'))) throw new Error('no production build: run `npm run build` first (`npm run test:artifact` does)')
    copy = await mkdtemp(path.join(tmpdir(), 'lazarus-artifact-'))
    await cp(BUILD, copy, { recursive: true, verbatimSymlinks: true })
    database = await createEmptyPostgres('lazarus_artifact')
    const connection = await brokerConnection()
    await declareWorkTopology(await connection.createChannel(), names)
    await connection.close()
  })

  afterAll(async () => {
    for (const child of processes) if (child.exitCode === null) child.kill('SIGKILL')
    const connection = await brokerConnection().catch(() => undefined)
    await deleteWorkTopology(await connection?.createChannel(), names)
    await connection?.close()
    await database?.drop()
    if (copy) await rm(copy, { recursive: true, force: true })
  })

  it('carries no TypeScript toolchain and no source', async () => {
    const modules = await readdir(path.join(copy, 'node_modules'))
    expect(modules).not.toContain('tsx')
    expect(modules).not.toContain('typescript')
    expect(modules).not.toContain('esbuild')
    expect(existsSync(path.join(copy, 'lib'))).toBe(false)
  })

  it('migrates, serves, drains and replays byte for byte, and both processes stop cleanly on SIGTERM', async () => {
    const migrate = run('migrate.mjs', {})
    const [code] = await once(migrate, 'exit')
    expect(code, migrate.output()).toBe(0)
    expect(migrate.output()).toContain('migrations applied')
    const client = new pg.Client({ connectionString: database!.url })
    await client.connect()
    const { rows } = await client.query('SELECT count(*)::int AS n FROM _lazarus_migrations').finally(() => client.end())
    expect(rows[0].n).toBe((await readdir(path.join(copy, 'prisma/migrations'))).length)

    const port = await freePort()
    const web = run('serve.mjs', { PORT: String(port), HOSTNAME: '127.0.0.1', LAZARUS_RUN_WORKERS: '0', LAZARUS_ADMIN_TOKEN: TOKEN, LAZARUS_SOURCES: '' })
    const worker = run('worker.mjs', { LAZARUS_SOURCES: names.dlq })
    const base = `http://127.0.0.1:${port}`
    const api = async (route: string, init: RequestInit = {}) => {
      const response = await fetch(`${base}${route}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } })
      const body = (await response.json()) as Record<string, unknown>
      if (!response.ok) throw new Error(`${route}: HTTP ${response.status} ${JSON.stringify(body)}`)
      return body
    }
    await waitFor(async () => (web.exitCode === null ? (await fetch(`${base}/api/health`).catch(() => undefined))?.ok : Promise.reject(new Error(web.output()))), {
      timeoutMs: 60_000,
      what: 'the built web process to answer /api/health',
    })
    // The page's scripts come from the build's static folder, which Next's standalone output leaves out.
    const page = await (await fetch(`${base}/sign-in`)).text()
    const script = page.match(/\/_next\/static\/[^"]+\.js/)?.[0]
    expect(script).toBeDefined()
    expect((await fetch(`${base}${script}`)).status).toBe(200)

    const bodies = [Buffer.from('{"orderId":"A-1","total":12.5}'), Buffer.from([0x00, 0xff, 0xfe, 0x10, 0x80])]
    const connection = await brokerConnection()
    try {
      await deadLetterThrough(connection, { ...names, messages: bodies.map((body) => ({ body, options: { headers: { 'x-tenant': 'acme' } } })) })
      const stored = await waitFor(
        async () => {
          const { messages } = (await api('/api/messages')) as { messages: { id: string }[] }
          return messages.length === bodies.length && messages
        },
        { timeoutMs: 30_000, what: `the built worker to drain ${names.dlq}` },
      )
      const job = (await api('/api/replays', { method: 'POST', body: JSON.stringify({ selection: { ids: stored.map((m) => m.id) } }) })) as { id: string }
      await waitFor(async () => ((await api(`/api/replays/${job.id}`)).status === 'completed' ? true : undefined), {
        timeoutMs: 30_000,
        what: 'the built worker to finish the replay',
      })
      const replayed = await collect(connection, names.work, bodies.length, 10_000)
      expect(replayed.map((m) => m.content.toString('hex')).sort()).toEqual(bodies.map((b) => b.toString('hex')).sort())
      expect(replayed.every((m) => m.properties.headers?.['x-tenant'] === 'acme')).toBe(true)
    } finally {
      await connection.close()
    }

    expect(await stop(worker), worker.output()).toBe(0)
    expect(await stop(web), web.output()).toBe(0)
  })
})
