import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { chmod, chown, cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { withOutput } from '../helpers/child-output'
import { AMQP_URL, waitFor } from '../helpers/broker'
import { createEmptyPostgres } from '../helpers/engine-db'
import { freePort } from '../e2e/support/lazarus-server'
import { parseDockerfile, type DockerStage } from './dockerfile'

/**
 * No Docker daemon runs on these machines, so the image is tested by running what its Dockerfile says
 * (docs/operations.md#the-container-image): the build stage's commands are the ones CI runs on every push (`npm ci`,
 * `npm run build`), and the runtime stage (its user, environment, volume, health check, entry point and command) is
 * played here against that build, copied outside the repository: as a non-root user, with the application files
 * read-only and only the data volume writable, as `docker run --read-only -v …:/data` would run it.
 */
const ROOT = path.resolve(import.meta.dirname, '../..')
const NOBODY = 65_534
const asRoot = process.getuid?.() === 0

let build: DockerStage
let runtime: DockerStage
let fakeRoot: string
const running: ChildProcess[] = []
let workerDb: { url: string; drop(): Promise<void> }
let webDb: { url: string; drop(): Promise<void> }

/** `/app/x` and `/data` of the image, as folders of this test. */
const hostPath = (imagePath: string) => path.join(fakeRoot, imagePath)

/** Starts the image's ENTRYPOINT with `command` (as a CMD would), as the image's user, in its WORKDIR. */
const runImage = (command: string[], env: Record<string, string>) => runAsImageUser([...runtime.entrypoint, ...command], env)

/** Runs `argv` as the image's user, in its WORKDIR, with its environment and `env` (as `docker run -e` would add). */
function runAsImageUser([program, ...args]: string[], env: Record<string, string>): ChildProcess & { output: () => string } {
  expect(program).toBe('node')
  const child = spawn(process.execPath, args, {
    cwd: hostPath(runtime.workdir),
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', ...imageEnv(), ...env },
    // The Dockerfile's USER is `node`; uid 65534 stands in for it, as an unprivileged user owning nothing but /data.
    ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.push(child)
  return withOutput(child)
}

/** The runtime stage's ENV with the image's absolute paths moved under this test's folder. */
function imageEnv(): Record<string, string> {
  return Object.fromEntries(Object.entries(runtime.env).map(([name, value]) => [name, value.startsWith('/') ? hostPath(value) : value]))
}

async function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode
  const [code] = await once(child, 'exit')
  return code as number | null
}

describe('the container image, run as its Dockerfile says', () => {
  beforeAll(async () => {
    const stages = parseDockerfile(await readFile(path.join(ROOT, 'Dockerfile'), 'utf8'))
    expect(stages.map((s) => s.name)).toEqual(['build', undefined])
    ;[build, runtime] = stages
    fakeRoot = await mkdtemp(path.join(tmpdir(), 'lazarus-image-'))
    await chmod(fakeRoot, 0o755)
    // COPY --from=build: the build stage's output, which is this repository's `npm run build`.
    for (const copy of runtime.copies) {
      expect(copy.from).toBe('build')
      const source = path.join(ROOT, path.relative(build.workdir, copy.source))
      if (!existsSync(source)) throw new Error(`no ${source}: run \`npm run build\` first (\`npm run test:artifact\` does)`)
      await cp(source, path.join(hostPath(runtime.workdir), copy.destination), { recursive: true, verbatimSymlinks: true })
    }
    for (const volume of runtime.volumes) {
      await mkdir(hostPath(volume), { recursive: true })
      if (asRoot) await chown(hostPath(volume), NOBODY, NOBODY)
    }
    workerDb = await createEmptyPostgres('lazarus_image')
    webDb = await createEmptyPostgres('lazarus_image_web')
  })

  afterAll(async () => {
    for (const child of running) if (child.exitCode === null) child.kill('SIGKILL')
    await workerDb?.drop()
    await webDb?.drop()
    if (fakeRoot) await rm(fakeRoot, { recursive: true, force: true })
  })

  it('is built from one exact Node image, the version these tests run on, by the commands CI runs', async () => {
    for (const stage of [build, runtime]) expect(stage.from).toBe(`node:${process.versions.node}-bookworm-slim`)
    expect(build.runs).toEqual(['npm ci --no-audit --no-fund', 'npm run build'])
    expect(await readFile(path.join(ROOT, '.ci/run'), 'utf8')).toContain('npm ci --no-audit --no-fund')
    expect(await readFile(path.join(ROOT, 'tests/run-all.sh'), 'utf8')).toContain('npm run build')
    // What the build stage copies before `npm ci` exists, and what the context leaves out is not needed.
    for (const copy of build.copies.filter((c) => !c.from)) for (const source of copy.sources) expect(existsSync(path.join(ROOT, source)), source).toBe(true)
    const ignored = (await readFile(path.join(ROOT, '.dockerignore'), 'utf8')).split('\n')
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', '.next', '.data', '.git']))
  })

  it('runs as a non-root user whose only writable folder is the declared data volume', () => {
    expect(runtime.user).toBeDefined()
    expect(['root', '0']).not.toContain(runtime.user)
    expect(runtime.volumes).toContain(runtime.env.LAZARUS_DATA_DIR)
    expect(runtime.runs.join('\n')).toContain(`chown ${runtime.user}:${runtime.user} ${runtime.env.LAZARUS_DATA_DIR}`)
    expect(runtime.env.NODE_ENV).toBe('production')
  })

  it('serves with the application read-only, is healthy by its HEALTHCHECK, and exits 0 on SIGTERM', async () => {
    const before = await readdir(hostPath(runtime.workdir), { recursive: true })
    const port = String(await freePort())
    // Beyond loopback (HOSTNAME=0.0.0.0) Lazarus needs PostgreSQL, its public address and a first admin, as
    // docker-compose.yml sets.
    const env = {
      PORT: port,
      DATABASE_URL: webDb.url,
      AMQP_URL,
      LAZARUS_PUBLIC_URL: `http://localhost:${port}`,
      LAZARUS_ADMIN_EMAIL: 'ops@lazarus.test',
      LAZARUS_ADMIN_PASSWORD: 'image-test-password-not-secret',
      LAZARUS_SOURCES: '',
    }
    const web = runImage(runtime.cmd, env)
    const healthcheck = async () => {
      if (web.exitCode !== null) throw new Error(`the web process exited ${web.exitCode}:\n${web.output()}`)
      const probe = runAsImageUser(runtime.healthcheck, env)
      return (await exitOf(probe)) === 0
    }
    await waitFor(healthcheck, { timeoutMs: 90_000, intervalMs: 250, what: 'the HEALTHCHECK to pass' })
    // Reached through its published port, as a browser would.
    expect((await fetch(`http://localhost:${port}/sign-in`)).status).toBe(200)

    web.kill('SIGTERM')
    expect(await exitOf(web), web.output()).toBe(0)
    expect(web.output()).not.toMatch(/EACCES|EROFS/)
    expect(await readdir(hostPath(runtime.workdir), { recursive: true })).toEqual(before)
    // Stopped, the health check fails: it probes this container's process, nothing else.
    expect(await exitOf(runAsImageUser(runtime.healthcheck, env))).toBe(1)
  })

  it('runs the worker as the second command of the same image, which refuses the embedded database', async () => {
    const alone = runImage(['dist/worker.mjs'], { LAZARUS_SOURCES: '' })
    expect(await exitOf(alone)).toBe(78)
    expect(alone.output()).toContain('npm run worker needs DATABASE_URL')

    const worker = runImage(['dist/worker.mjs'], { DATABASE_URL: workerDb.url, AMQP_URL, LAZARUS_SOURCES: '', LAZARUS_LOG_LEVEL: 'info' })
    await waitFor(async () => worker.output().includes('"msg":"draining"') || (worker.exitCode !== null && Promise.reject(new Error(worker.output()))), {
      timeoutMs: 60_000,
      what: 'the worker to start draining',
    })
    worker.kill('SIGTERM')
    expect(await exitOf(worker), worker.output()).toBe(0)
  })
})
