/** Shared pieces of the `npm run bench:*` scripts: fresh databases, child processes, memory sampling. */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import pg from 'pg'

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
 * Starts `npm run worker`'s entry point as a child process with extra env. WORKER_PROF=<dir> writes a V8 CPU profile
 * of it there (node --cpu-prof); WORKER_NODE_OPTIONS becomes the worker's NODE_OPTIONS (e.g. --import a probe).
 */
export function startWorker(env: Record<string, string>): ChildProcess {
  // The flags of package.json's "worker" script.
  const flags = ['--max-semi-space-size=8', '--conditions=react-server', '--import', 'tsx']
  return spawn(process.execPath, [...(process.env.WORKER_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.WORKER_PROF] : []), ...flags, 'lib/worker/main.ts'], {
    env: { ...process.env, LAZARUS_LOG_LEVEL: 'warn', ...(process.env.WORKER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.WORKER_NODE_OPTIONS } : {}), ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
}

/** Peak resident memory of a live process, from the kernel's high-water mark, in MiB. */
export function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return Math.round(kb / 1024)
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
