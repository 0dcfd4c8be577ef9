import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pausesRoute from '@/app/api/pauses/route'
import { createPause } from '@/lib/server/pauses/create-pause'
import { composition } from '@/lib/server/platform/process/composition'
import { createTestUser } from '../helpers/auth'
import { AMQP_URL, queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { isolatePauseTopology } from '../helpers/pause-topology'

const run = promisify(execFile)
const topology = isolatePauseTopology()
const root = path.resolve(import.meta.dirname, '../..')
const packageDir = path.join(root, 'packages/guard')
const RULE = { kind: 'jsonPointer', pointer: '/orderId' } as const

/** npm as a user runs it: none of the npm_* settings of an `npm test` that started this run. */
function npm(args: string[], cwd: string) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_'))) as NodeJS.ProcessEnv
  return run('npm', args, { cwd, env, maxBuffer: 16 * 1024 * 1024 })
}

type Flavour = 'esm' | 'cjs'
type AppEvent = { event: string; [key: string]: unknown }

/**
 * The application that installs the tarball: a consumer of its own queue behind the guard, in either module system,
 * that says on stdout, one JSON line each, what its handler got, what the guard held, and when it consumes and closes.
 */
function consumerSource(flavour: Flavour): string {
  const load =
    flavour === 'esm'
      ? "import amqp from 'amqplib'\nimport { createGuard, GUARD_VERSION } from '@lazarus/guard'"
      : "const amqp = require('amqplib')\nconst { createGuard, GUARD_VERSION } = require('@lazarus/guard')"
  return `${load}

const say = (event) => process.stdout.write(JSON.stringify(event) + '\\n')

async function main() {
  const env = process.env
  const connection = await amqp.connect(env.AMQP_URL)
  const channel = await connection.createChannel()
  await channel.prefetch(20)
  const guard = createGuard({
    connection, queue: env.QUEUE, lazarusUrl: env.LAZARUS_URL, token: env.LAZARUS_GUARD_TOKEN,
    controlExchange: env.CONTROL_EXCHANGE, holdExchange: env.HOLD_EXCHANGE, pollIntervalMs: 60000, retryDelayMs: 100,
    // Long enough that a timer close() left behind would hold the process past the test's limit.
    confirmTimeoutMs: 600000,
    onError: (error) => say({ event: 'error', message: error.message }),
    onHold: ({ pauseId, entityKey }) => say({ event: 'held', pauseId, entityKey }),
  })
  await guard.consume(channel, (message) => {
    if (!message) return
    say({ event: 'handled', ...JSON.parse(message.content.toString()) })
    channel.ack(message)
  })
  process.once('SIGTERM', async () => {
    await guard.close()
    await connection.close()
    say({ event: 'closed' })
  })
  say({ event: 'consuming', version: GUARD_VERSION, instance: guard.instanceId, pauses: guard.pauses().map((pause) => pause.entityKey) })
}

main().catch((error) => {
  say({ event: 'crashed', message: String((error && error.stack) || error) })
  process.exitCode = 1
})
`
}

/** TypeScript applications of both module systems, checked against the installed declarations. */
const TYPED_USES = {
  'esm.mts': `import amqp from 'amqplib'
import { createGuard, GUARD_VERSION, type Guard, type GuardOptions } from '@lazarus/guard'

export async function start(options: Omit<GuardOptions, 'connection'>): Promise<Guard> {
  return createGuard({ ...options, connection: await amqp.connect('amqp://127.0.0.1') })
}
export const version: string = GUARD_VERSION
// @ts-expect-error: a queue is a name
createGuard({ connection: null as never, queue: 42, lazarusUrl: 'http://lazarus:3000' })
`,
  'cjs.cts': `import amqp = require('amqplib')
import guard = require('@lazarus/guard')

export async function start(options: Omit<guard.GuardOptions, 'connection'>): Promise<guard.Guard> {
  return guard.createGuard({ ...options, connection: await amqp.connect('amqp://127.0.0.1') })
}
export const version: string = guard.GUARD_VERSION
// @ts-expect-error: the guard has no such option
guard.createGuard({ connection: null as never, queue: 'orders.work', lazarusUrl: 'http://lazarus:3000', pollEveryMs: 5 })
`,
}

/**
 * The guard as applications get it (docs/ARCHITECTURE.md#pause-hold-release, "The guard package"): `npm pack` builds
 * packages/guard with tsup, and a throwaway application outside the repository installs the tarball (offline, with
 * the amqplib this checkout has) and guards a real queue against a running Lazarus, once with `import` and once with
 * `require`. Lazarus here is its real GET /api/pauses route behind a loopback server, the pause runtime and the
 * drainer that stores held messages.
 */
describe('@lazarus/guard, packed and installed into an application', () => {
  let lazarus: Awaited<ReturnType<typeof topology.startLazarus>>
  let work: string
  let appDir: string
  let packed: { filename: string; version: string; files: { path: string }[] }
  let manifest: { version: string }
  const queues: string[] = []
  const children: ChildProcess[] = []

  beforeAll(async () => {
    manifest = JSON.parse(await readFile(path.join(packageDir, 'package.json'), 'utf8'))
    work = await mkdtemp(path.join(tmpdir(), 'lazarus-guard-'))
    // prepack builds dist/ with tsup; the tarball holds what `files` names.
    const { stdout } = await npm(['pack', '--json', '--pack-destination', work], packageDir)
    // The report is the JSON array npm prints last, on lines of its own; the build's log comes before it (and says
    // more, with brackets, when CI is set).
    ;[packed] = JSON.parse(stdout.slice(stdout.search(/^\[\s*$/m)))
    appDir = path.join(work, 'app')
    await mkdir(appDir)
    await writeFile(path.join(appDir, 'package.json'), JSON.stringify({ name: 'guarded-app', version: '1.0.0', private: true }))
    // Offline: the tarball, and this checkout's amqplib copied in as a package (it has no dependencies of its own).
    await npm(['install', '--offline', '--no-audit', '--no-fund', '--install-links', path.join(work, packed.filename), path.join(root, 'node_modules/amqplib')], appDir)
    await writeFile(path.join(appDir, 'consumer.mjs'), consumerSource('esm'))
    await writeFile(path.join(appDir, 'consumer.cjs'), consumerSource('cjs'))

    lazarus = await topology.startLazarus({ dlq: uniqueName('pkg_dlq'), entityKey: RULE, routes: { '/api/pauses': pausesRoute } })
  })

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await lazarus?.stop(queues)
    if (work) await rm(work, { recursive: true, force: true })
  })

  /** Starts the application's consumer; `events` fills with what it says, `exited` resolves with its exit code. */
  function startConsumer(flavour: Flavour, env: Record<string, string>) {
    const child = spawn(process.execPath, [flavour === 'esm' ? 'consumer.mjs' : 'consumer.cjs'], {
      cwd: appDir,
      // The application's own environment: nothing of this test process (DATABASE_URL, Lazarus' settings) leaks into it.
      env: { PATH: process.env.PATH, NODE_ENV: 'production', AMQP_URL, LAZARUS_URL: lazarus.server.url, CONTROL_EXCHANGE: topology.control, HOLD_EXCHANGE: topology.hold, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    const events: AppEvent[] = []
    let output = ''
    let partial = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n')
      partial = lines.pop() ?? ''
      for (const line of lines) events.push(JSON.parse(line) as AppEvent)
    })
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    const next = (what: string, match: (event: AppEvent) => boolean) =>
      waitFor(async () => {
        if (child.exitCode !== null) throw new Error(`the ${flavour} consumer exited ${child.exitCode}: ${output}${JSON.stringify(events)}`)
        return events.find(match)
      }, { what })
    return { child, events, exited, next }
  }

  async function publish(queue: string, orders: { orderId: string; n: number }[]) {
    const channel = await lazarus.app.createConfirmChannel()
    for (const order of orders) channel.sendToQueue(queue, Buffer.from(JSON.stringify(order)), { contentType: 'application/json' })
    await channel.waitForConfirms()
    await channel.close()
  }

  async function heldRows(queue: string) {
    const { rows } = await lazarus.db.sql.query<{ entity_key: string; n: number; status: string }>(
      `SELECT d.entity_key, (convert_from(d.body, 'UTF8')::jsonb->>'n')::int AS n, st.status
       FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id WHERE d.held_from = $1 ORDER BY d.id`,
      [queue],
    )
    return rows
  }

  it('npm pack ships the ESM and CommonJS bundles, their type declarations, the README and the CHANGELOG, nothing else', () => {
    expect(packed.version).toBe(manifest.version)
    expect(packed.files.map((file) => file.path).sort()).toEqual(['CHANGELOG.md', 'README.md', 'dist/index.cjs', 'dist/index.d.cts', 'dist/index.d.ts', 'dist/index.js', 'package.json'])
  })

  for (const flavour of ['esm', 'cjs'] as const) {
    it(`an application that ${flavour === 'esm' ? 'imports' : 'requires'} the installed package holds a paused entity's messages and handles the others`, async () => {
      const queue = uniqueName(`pkg_${flavour}`)
      const setup = await lazarus.app.createChannel()
      await setup.assertQueue(queue, { durable: false })
      await setup.close()
      queues.push(queue)
      const { token } = await createTestUser(lazarus.db, `pkg-${flavour}-${randomBytes(4).toString('hex')}`, [{ role: 'operator' }], { scope: 'guard', guardQueue: queue })
      const pause = (entityKey: string) => createPause({ db: lazarus.db, control: composition().control, input: { sourceId: lazarus.sourceId, queue, entityKey, reason: `the ${flavour} package test` }, actor: 'ann@lazarus.test', allowAnyQueue: true })
      const first = await pause('order-2')

      const consumer = startConsumer(flavour, { QUEUE: queue, LAZARUS_GUARD_TOKEN: token })
      // The version is the package's own, and the first pause list was read before consuming.
      const consuming = await consumer.next('the consumer to start', (e) => e.event === 'consuming')
      expect(consuming).toMatchObject({ version: manifest.version, pauses: ['order-2'] })

      await publish(queue, [{ orderId: 'order-1', n: 1 }, { orderId: 'order-2', n: 2 }, { orderId: 'order-3', n: 3 }, { orderId: 'order-2', n: 4 }])
      await waitFor(async () => (await heldRows(queue)).length === 2, { what: "order-2's two messages stored held" })
      await consumer.next('order-3 handled', (e) => e.event === 'handled' && e.orderId === 'order-3')
      expect(await heldRows(queue)).toEqual([
        { entity_key: 'order-2', n: 2, status: 'held' },
        { entity_key: 'order-2', n: 4, status: 'held' },
      ])

      // A pause created while it runs reaches it through lazarus.control: it polls only every minute here.
      const second = await pause('order-3')
      await waitFor(async () => lazarus.server.exchanges.some((e) => e.query.instance === consuming.instance && (e.answer as { pauses?: { id: string }[] }).pauses?.some((p) => p.id === second.id)), {
        what: 'the consumer to read the second pause',
      })
      await publish(queue, [{ orderId: 'order-3', n: 5 }, { orderId: 'order-1', n: 6 }])
      await consumer.next('order-1 handled again', (e) => e.event === 'handled' && e.n === 6)
      await waitFor(async () => (await heldRows(queue)).length === 3, { what: "order-3's message stored held" })

      expect(consumer.events.filter((e) => e.event === 'handled')).toEqual([
        { event: 'handled', orderId: 'order-1', n: 1 },
        { event: 'handled', orderId: 'order-3', n: 3 },
        { event: 'handled', orderId: 'order-1', n: 6 },
      ])
      expect(consumer.events.filter((e) => e.event === 'held')).toEqual([
        { event: 'held', pauseId: first.id, entityKey: 'order-2' },
        { event: 'held', pauseId: first.id, entityKey: 'order-2' },
        { event: 'held', pauseId: second.id, entityKey: 'order-3' },
      ])
      // Its polls are its heartbeat, with the package's version.
      const { rows: beats } = await lazarus.db.sql.query<{ guard_version: string }>(`SELECT guard_version FROM guard_heartbeats WHERE queue = $1`, [queue])
      expect(beats).toEqual([{ guard_version: manifest.version }])

      // Closing the guard and the connection lets the process end by itself: nothing of the guard keeps it alive.
      consumer.child.kill('SIGTERM')
      expect(await consumer.exited).toBe(0)
      expect(consumer.events.at(-1)).toEqual({ event: 'closed' })
      expect(consumer.events.filter((e) => e.event === 'error' || e.event === 'crashed')).toEqual([])
      expect(await queueDepth(queue)).toBe(0)
    })
  }

  it('its type declarations serve TypeScript applications in both module systems', async () => {
    const typed = path.join(appDir, 'typed')
    await mkdir(typed)
    for (const [file, source] of Object.entries(TYPED_USES)) await writeFile(path.join(typed, file), source)
    await writeFile(
      path.join(typed, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          // As most applications check: their own code, against declarations resolved through the package's exports.
          // A declaration that failed to resolve would turn into `any`, which the @ts-expect-error lines catch.
          module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2023'], strict: true, noEmit: true, skipLibCheck: true,
          types: ['node'], typeRoots: [path.join(root, 'node_modules/@types')],
        },
        files: Object.keys(TYPED_USES),
      }),
    )
    const checked = await run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', typed]).then(
      () => 'no errors',
      (error: { stdout: string }) => error.stdout,
    )
    expect(checked).toBe('no errors')
  })
})
