import type { ChildProcess } from 'node:child_process'

/** Keeps the last 20,000 characters a child wrote to stdout and stderr, for assertions and failure messages. */
export function withOutput<T extends ChildProcess>(child: T): T & { output: () => string } {
  let output = ''
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  return Object.assign(child, { output: () => output })
}
