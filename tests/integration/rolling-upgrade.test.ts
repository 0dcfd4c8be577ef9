import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { build } from 'esbuild'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { composition } from '@/lib/server/platform/process/composition'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { withOutput } from '../helpers/child-output'
import { AMQP_URL, brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { collect, deadLetterThrough, declareWorkTopology, deleteWorkTopology, replayIdOf } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'

/**
 * A rolling upgrade (docs/operations.md#upgrading-with-several-processes-running): the previous release's worker keeps
 * running on the schema the new version migrated, beside a new worker, until it is stopped. The previous release is
 * the commit in .ci/previous-release, taken from git and built here as its `npm run worker` would run; its migrations
 * are a subset of today's, so it starts, finds them applied, and works. Both drain the same DLQ, each message is
 * stored once, and a replay the old worker runs is finished by the new one when the old one is stopped.
 */
const root = path.resolve(import.meta.dirname, '../..')
const run = promisify(execFile)
const names = { exchange: uniqueName('upgrade_x'), key: 'orders', work: uniqueName('upgrade_work'), dlq: uniqueName('upgrade_dlq') }

let previous: string
let oldTree: string
let db: TestDb
let connection: ChannelModel
const workers: ChildProcess[] = []

/** The previous release's source, with this checkout's packages, its own Prisma client, and its worker bundled. */
async function buildPreviousRelease(commit: string): Promise<string> {
  const known = await run('git', ['cat-file', '-t', commit], { cwd: root }).catch(() => undefined)
  if (known?.stdout.trim() !== 'commit') throw new Error(`the previous release ${commit} (.ci/previous-release) is not in this clone's history: git fetch --unshallow`)
  const tree = await mkdtemp(path.join(tmpdir(), 'lazarus-previous-'))
  const archive = await run('git', ['archive', '--format=tar', commit], { cwd: root, encoding: 'buffer', maxBuffer: 512 * 1024 * 1024 })
  const untar = spawn('tar', ['-x', '-C', tree], { stdio: ['pipe', 'ignore', 'inherit'] })
  untar.stdin.end(archive.stdout)
  expect((await once(untar, 'exit'))[0]).toBe(0)
  await symlink(path.join(root, 'node_modules'), path.join(tree, 'node_modules'), 'dir')
  await run(process.execPath, [path.join(root, 'node_modules/prisma/build/index.js'), 'generate'], {
    cwd: tree,
    env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: path.join(tree, 'prisma/no-schema-engine.sh') },
  })
  await build({
    absWorkingDir: tree,
    entryPoints: { worker: 'lib/worker/main.ts' },
    outdir: path.join(tree, 'dist'),
    outExtension: { '.js': '.mjs' },
    bundle: true,
    packages: 'external',
    conditions: ['react-server'],
    platform: 'node',
    format: 'esm',
    target: 'node20.19',
    logLevel: 'error',
  })
  return tree
}

function startWorker(file: string, cwd: string): ChildProcess & { output: () => string } {
  const child = withOutput(
    spawn(process.execPath, ['--conditions=react-server', file], {
      cwd,
      env: { ...process.env, DATABASE_URL: db.url, AMQP_URL, LAZARUS_SOURCES: names.dlq, LAZARUS_REPLAY_LEASE_MS: '1500', LAZARUS_REPLAY_POLL_MS: '100', LAZARUS_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  )
  workers.push(child)
  return child
}

describe('a rolling upgrade from the previous release', () => {
  beforeAll(async () => {
    previous = (await readFile(path.join(root, '.ci/previous-release'), 'utf8')).trim()
    oldTree = await buildPreviousRelease(previous)
    // The new version's schema: every migration of this checkout.
    db = await createTestDb()
    connection = await brokerConnection()
    await declareWorkTopology(await connection.createChannel(), names)
  }, 120_000)

  afterAll(async () => {
    for (const worker of workers) if (worker.exitCode === null) worker.kill('SIGKILL')
    await deleteWorkTopology(await connection?.createChannel(), names)
    await connection?.close()
    await db?.drop()
    if (oldTree) await rm(oldTree, { recursive: true, force: true })
  })

  it('runs the previous release’s worker beside a new one on the new schema, and hands its work over when stopped', async () => {
    const queueConsumers = async () => (await (await connection.createChannel()).checkQueue(names.dlq)).consumerCount
    const old = startWorker(path.join(oldTree, 'dist/worker.mjs'), oldTree)
    await waitFor(async () => (old.exitCode !== null ? Promise.reject(new Error(old.output())) : (await queueConsumers()) === 1), { timeoutMs: 60_000, what: 'the previous release’s worker to drain' })
    const fresh = startWorker(path.join(inject('processBundles'), 'worker.mjs'), root)
    await waitFor(async () => (await queueConsumers()) === 2, { timeoutMs: 60_000, what: 'the new worker to drain beside it' })

    const total = 400
    await deadLetterThrough(connection, { ...names, messages: Array.from({ length: total }, (_, i) => ({ body: Buffer.from(`{"order":${i}}`), options: { messageId: `upgrade-${i}` } })) })
    await waitFor(async () => Number((await db.sql.query<{ n: string }>('SELECT count(*) AS n FROM dead_letters')).rows[0].n) >= total, { timeoutMs: 30_000, what: 'both workers to store the dead letters' })
    const { rows } = await db.sql.query<{ n: string; distinct: string }>(`SELECT count(*) AS n, count(DISTINCT properties->>'messageId') AS distinct FROM dead_letters`)
    expect(rows[0]).toEqual({ n: String(total), distinct: String(total) })

    // The new worker steps back for a moment, so the replay starts in the old one; then the old one is stopped.
    fresh.kill('SIGSTOP')
    const { rows: groups } = await db.sql.query<{ id: string }>('SELECT id::text FROM error_groups')
    const job = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { groupId: groups[0].id }, ratePerSecond: 200, confirmCount: total }, actor: 'upgrade-test' })) as ReplayCreatedDto
    await waitFor(async () => Number((await db.sql.query<{ n: string }>(`SELECT count(*) AS n FROM replay_items WHERE job_id = $1::bigint AND status = 'confirmed'`, [job.id])).rows[0].n) > 0, {
      timeoutMs: 30_000,
      what: 'the previous release’s worker to publish',
    })
    fresh.kill('SIGCONT')
    old.kill('SIGTERM')
    expect((await once(old, 'exit'))[0], old.output()).toBe(0)

    await waitFor(async () => (await db.sql.query<{ status: string }>('SELECT status FROM replay_jobs WHERE id = $1::bigint', [job.id])).rows[0].status === 'completed', {
      timeoutMs: 60_000,
      what: 'the new worker to finish the replay',
    })
    const received = await collect(connection, names.work, total, 20_000)
    // A SIGTERM hands the job over cleanly: each message once, none twice.
    expect(new Set(received.map(replayIdOf)).size).toBe(total)
    expect((await (await connection.createChannel()).checkQueue(names.work)).messageCount).toBe(0)
    expect(received.map((m) => m.content.toString()).sort()).toEqual(Array.from({ length: total }, (_, i) => `{"order":${i}}`).sort())
    fresh.kill('SIGTERM')
    expect((await once(fresh, 'exit'))[0], fresh.output()).toBe(0)
  })
})
