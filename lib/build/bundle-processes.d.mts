/** The process entry points bundleProcesses compiles, by output name. */
export const PROCESS_ENTRIES: Record<'serve' | 'worker' | 'migrate' | 'move' | 'healthcheck', string>

/**
 * Compiles Lazarus' process entry points to `<outdir>/{serve,worker,migrate,move,healthcheck}.mjs`, or `entries`
 * (output name → source file) the same way (lib/build/bundle-processes.mjs).
 */
export function bundleProcesses(options: { outdir: string; entries?: Record<string, string> }): Promise<{ outdir: string; packages: string[] }>
