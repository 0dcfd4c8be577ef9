import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import pg from 'pg'

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export type LazarusServer = { url: string; databaseUrl: string; output: () => string; stop(): Promise<void> }

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/**
 * A second Lazarus for a spec that needs its own configuration (single sign-on, say): the production build behind
 * the HTTP front, as `npm start` runs it, on a fresh database. It drains nothing.
 */
export async function startLazarus(env: Record<string, string>, port?: number): Promise<LazarusServer> {
  port ??= await freePort()
  const name = `lazarus_e2e_${port}`
  const admin = new pg.Client({ connectionString: ADMIN_URL })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const databaseUrl = ADMIN_URL.replace(/\/[^/]*$/, `/${name}`)
  let output = ''
  const child: ChildProcess = spawn(process.execPath, ['.next/standalone/dist/serve.mjs'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      LAZARUS_MIGRATIONS_DIR: `${process.cwd()}/prisma/migrations`,
      LAZARUS_RUN_WORKERS: '0',
      LAZARUS_SOURCES: '',
      PORT: String(port),
      HOSTNAME: '127.0.0.1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.on('data', (d) => (output += d))
  child.stderr!.on('data', (d) => (output += d))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 90_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Lazarus exited (${child.exitCode}):\n${output}`)
    try {
      if ((await fetch(`${url}/api/health`)).ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`Lazarus did not start within 90 s:\n${output}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return {
    url,
    databaseUrl,
    output: () => output,
    async stop() {
      child.kill('SIGTERM')
      await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)))
      const c = new pg.Client({ connectionString: ADMIN_URL })
      await c.connect()
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await c.end()
    },
  }
}
