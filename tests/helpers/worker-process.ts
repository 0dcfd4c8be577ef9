import { spawn, type ChildProcess } from 'node:child_process'
import { AMQP_URL } from './broker'

/** Runs `npm run worker`'s entry point as a real child process, so tests can SIGKILL it. */
export function spawnWorker(env: Record<string, string>): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, ['--conditions=react-server', '--import', 'tsx', 'lib/worker/main.ts'], {
    env: { ...process.env, AMQP_URL, LAZARUS_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  return Object.assign(child, { output: () => output })
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}
