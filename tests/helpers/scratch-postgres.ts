import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
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

/**
 * A port for the scratch server below the kernel's ephemeral range (ip_local_port_range, 32768 up on Linux). A port
 * inside it can be held at any moment by one of the machine's own outgoing connections (every test talks to RabbitMQ
 * and PostgreSQL), and the server must get the same port back when a test restarts it.
 */
function candidatePort(): number {
  let ephemeralLow = 32_768
  try {
    ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || ephemeralLow
  } catch {
    // not Linux: keep the usual default
  }
  const low = Math.min(20_000, ephemeralLow - 1_000)
  return low + Math.floor(Math.random() * (ephemeralLow - low))
}

export function createScratchPostgres(): ScratchPostgres {
  const bin = binDir()
  const dir = mkdtempSync(path.join(tmpdir(), 'lazarus-pg-'))
  chmodSync(dir, 0o777)
  const data = path.join(dir, 'data')
  const log = path.join(dir, 'log')
  // The server refuses to run as root; the Debian package's postgres user owns the scratch cluster.
  const asPostgres = (args: string[]) =>
    execFileSync('su', ['postgres', '-s', '/bin/sh', '-c', args.map((a) => `'${a}'`).join(' ')], { stdio: 'pipe' })
  const pgCtl = (...args: string[]) => asPostgres([`${bin}/pg_ctl`, '-D', data, '-w', '-t', '30', ...args])
  let port = candidatePort()
  const start = () => pgCtl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, '-l', log, 'start')
  try {
    asPostgres([`${bin}/initdb`, '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
    // Another process may still have taken the port: try a few others before giving up.
    for (let attempt = 1; ; attempt++) {
      try {
        start()
        break
      } catch (error) {
        const inUse = existsSync(log) && readFileSync(log, 'utf8').includes('Address already in use')
        if (!inUse || attempt === 5) throw error
        rmSync(log, { force: true })
        port = candidatePort()
      }
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
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
