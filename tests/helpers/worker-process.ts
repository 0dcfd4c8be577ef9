import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { inject } from 'vitest'
import { withOutput } from './child-output'
import { AMQP_URL } from './broker'

/** Runs `npm run worker`'s entry point, built as production builds it, as a real child process, so tests can SIGKILL it. */
export function spawnWorker(env: Record<string, string>): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, [path.join(inject('processBundles'), 'worker.mjs')], {
    env: { ...process.env, AMQP_URL, LAZARUS_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return withOutput(child)
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}
