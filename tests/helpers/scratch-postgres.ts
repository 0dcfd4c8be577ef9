import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, chmodSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

/**
 * A throw-away PostgreSQL cluster of the machine's own server binaries on a private port, so a test can
 * stop and restart "the database" without disturbing the shared one other tests use.
 */
export type ScratchPostgres = { url: string; stop(): void; start(): void; destroy(): void }

function binDir(): string {
  const version = execFileSync('sh', ['-c', 'ls /usr/lib/postgresql | sort -V | tail -1']).toString().trim()
  return `/usr/lib/postgresql/${version}/bin`
}

export function createScratchPostgres(port = 55_000 + Math.floor(Math.random() * 5_000)): ScratchPostgres {
  const bin = binDir()
  const dir = mkdtempSync(path.join(tmpdir(), 'lazarus-pg-'))
  chmodSync(dir, 0o777)
  const data = path.join(dir, 'data')
  // The server refuses to run as root; the Debian package's postgres user owns the scratch cluster.
  const asPostgres = (args: string[]) =>
    execFileSync('su', ['postgres', '-s', '/bin/sh', '-c', args.map((a) => `'${a}'`).join(' ')], { stdio: 'pipe' })
  asPostgres([`${bin}/initdb`, '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  const pgCtl = (...args: string[]) => asPostgres([`${bin}/pg_ctl`, '-D', data, '-w', '-t', '30', ...args])
  const start = () => pgCtl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, '-l', path.join(dir, 'log'), 'start')
  start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    // "immediate" is what a crash or a pulled plug looks like to clients: connections just drop.
    stop: () => pgCtl('-m', 'immediate', 'stop'),
    destroy() {
      try {
        pgCtl('-m', 'immediate', 'stop')
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
