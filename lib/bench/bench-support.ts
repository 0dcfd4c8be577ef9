/** Shared pieces of the `npm run bench:*` scripts: fresh databases, child processes, memory sampling. */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { bundleProcesses } from '@/lib/build/bundle-processes.mjs'

export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export async function freshDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(3).toString('hex')}`
  const admin = new pg.Client({ connectionString: ADMIN_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL })
      await c.connect()
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await c.end()
    },
  }
}

/**
 * The V8 flag and environment `npm start` and `npm run worker` run Lazarus' processes with (package.json; a unit test
 * holds the two together): a bench measures a process configured as production's is.
 */
export const PRODUCTION_NODE_FLAGS = ['--max-semi-space-size=8']
export const productionEnv = (): NodeJS.ProcessEnv => ({ ...process.env, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2' })

const bundles = new Map<string, Promise<string>>()

/**
 * An entry point compiled by the build's bundler (lib/build/bundle-processes.mjs, once per bench run, into
 * test-results/bench-processes): the file `node` runs, with no TypeScript loader in the measured process. Without
 * `source`, one of the build's own process entry points.
 */
export function bundledEntry(name: string, source?: string): Promise<string> {
  let bundle = bundles.get(name)
  if (!bundle) {
    const outdir = `test-results/bench-processes${source ? `/${name}` : ''}`
    bundle = bundleProcesses(source ? { outdir, entries: { [name]: source } } : { outdir }).then((built) => path.join(built.outdir, `${name}.mjs`))
    bundles.set(name, bundle)
  }
  return bundle
}

/**
 * Starts `npm run worker`'s entry point as production runs it: compiled by the build's bundler (bundledEntry) and run
 * by plain `node` with the production flags and MALLOC_ARENA_MAX. WORKER_PROF=<dir> writes a V8 CPU profile of it
 * there (node --cpu-prof); WORKER_NODE_OPTIONS becomes the worker's NODE_OPTIONS (e.g. --import a probe).
 */
export async function startWorker(env: Record<string, string>): Promise<ChildProcess> {
  const worker = await bundledEntry('worker')
  const profile = process.env.WORKER_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.WORKER_PROF] : []
  return spawn(process.execPath, [...profile, ...PRODUCTION_NODE_FLAGS, worker], {
    env: { ...productionEnv(), LAZARUS_LOG_LEVEL: 'warn', ...(process.env.WORKER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.WORKER_NODE_OPTIONS } : {}), ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
}

/** Peak resident memory of a live process, from the kernel's high-water mark, in MiB. */
export const peakRssMiB = (pid: number): number => statusMiB(pid, 'VmHWM')

/** Resident memory of a live process now, in MiB. */
export const rssMiB = (pid: number): number => statusMiB(pid, 'VmRSS')

function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
  return Math.round(kb / 1024)
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

type CpuSample = { node: number; nodePid: number; postgres: number; rabbitmq: number; nats: number; machine: number }

/** User and system CPU seconds of a process, and of its children that have exited and been waited for. */
function processCpu(pid: number | string): { own: number; reaped: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { own: (Number(fields[11]) + Number(fields[12])) / 100, reaped: (Number(fields[13]) + Number(fields[14])) / 100 }
  } catch {
    return { own: 0, reaped: 0 }
  }
}

/** CPU seconds of the processes named by `comms`, by name, with the exited children they reaped. */
function serverCpu<Comm extends string>(comms: readonly Comm[]): Record<Comm, number> {
  const seconds = Object.fromEntries(comms.map((c) => [c, 0])) as Record<Comm, number>
  for (const pid of readdirSync('/proc').filter((d) => /^[0-9]+$/.test(d))) {
    let comm: string
    try {
      comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
    } catch {
      continue // gone
    }
    if (!(comms as readonly string[]).includes(comm)) continue
    const cpu = processCpu(pid)
    seconds[comm as Comm] += cpu.own + cpu.reaped
  }
  return seconds
}

/**
 * CPU seconds used so far by the bench's Node process (or `nodePid`), by PostgreSQL, by RabbitMQ and by nats-server
 * (from /proc). PostgreSQL counts every backend, including those that ended: the postmaster reaps them, and the kernel
 * adds their time to its children's total, so a pool closed before the sample is still counted (it read 0 µs when only
 * the live backends were summed). The servers are counted whole, for every database, vhost and account: run benches on
 * a quiet machine.
 */
export function cpuSample(nodePid: number = process.pid): CpuSample {
  const servers = serverCpu(['postgres', 'beam.smp', 'nats-server'])
  return { node: processCpu(nodePid).own, nodePid, postgres: servers.postgres, rabbitmq: servers['beam.smp'], nats: servers['nats-server'], machine: machineBusySeconds() }
}

/**
 * Busy CPU seconds of the whole machine so far (/proc/stat: every process and the kernel's own work, such as loopback
 * networking, which no process is charged for). On a machine running nothing but the bench, the difference over a
 * phase is what that phase cost, however many processes did the work.
 */
export function machineBusySeconds(): number {
  const [user, nice, system, , , irq, softirq, steal = 0] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  return (user + nice + system + irq + softirq + steal) / 100
}

export const machineCores = availableParallelism()

const microseconds = (seconds: number) => `${(seconds * 1e6).toFixed(0)} µs`

/** The cores `perItemSeconds` of CPU per item keeps busy at `rate` items per second, as "3.1 cores (… µs each)". */
export function coresAt(perItemSeconds: number, rate: number): string {
  return `${(perItemSeconds * rate).toFixed(1)} cores (${microseconds(perItemSeconds)} each)`
}

/**
 * CPU per message since `before`: the text for the bench's output (naming the broker the phase used), and the whole
 * machine's and Node's share per message.
 */
export function cpuUse(before: CpuSample, count: number, broker: 'rabbitmq' | 'nats' = 'rabbitmq'): { text: string; machinePerItem: number; nodePerItem: number } {
  const now = cpuSample(before.nodePid)
  const per = (seconds: number) => microseconds(seconds / count)
  const machinePerItem = (now.machine - before.machine) / count
  return {
    text: `CPU per message: node ${per(now.node - before.node)}, postgres ${per(now.postgres - before.postgres)}, ${broker} ${per(now[broker] - before[broker])}; whole machine ${microseconds(machinePerItem)}`,
    machinePerItem,
    nodePerItem: (now.node - before.node) / count,
  }
}
