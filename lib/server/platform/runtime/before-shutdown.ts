import 'server-only'
import type { EventEmitter } from 'node:events'

/**
 * Work that must finish before a process stops its engines and closes its database: the web process's requests in
 * flight (lib/cli/serve.ts). The HTTP front and Next's server are two bundles with their own module instances in one
 * process, so they meet on `process` under a registered symbol rather than through a module's state.
 */
const BEFORE_SHUTDOWN = Symbol.for('lazarus.before-shutdown')
const processEvents: EventEmitter = process

export function onBeforeShutdown(hook: () => Promise<void>): void {
  processEvents.on(BEFORE_SHUTDOWN, hook)
}

export async function runBeforeShutdown(): Promise<void> {
  await Promise.all(processEvents.listeners(BEFORE_SHUTDOWN).map((hook) => (hook as () => Promise<void>)()))
}
