import 'server-only'
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { AppError } from '@/lib/server/platform/errors/app-error'

/**
 * The embedded database (PGlite) can be opened by one process only (docs/ARCHITECTURE.md#processes); a second
 * process opening the same files aborts inside WebAssembly with a message nobody can act on. So the process that
 * opens it first writes its pid to `<LAZARUS_DATA_DIR>/lazarus.pid`, and a second one stops with a sentence saying
 * who holds it. A lock left by a process that died (its pid is gone) is taken over.
 */
function inUse(pid: number, shownAs: string): AppError {
  return new AppError('unavailable', `another Lazarus (pid ${pid}) is using ${shownAs}; stop it or set DATABASE_URL`, { pid })
}

const held = new Map<string, number>()

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else; only ESRCH means it is gone.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8').trim(), 10)
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/**
 * Takes the data directory's lock for this process (`dataDir` must exist); returns the function that gives it back.
 * Opening the same directory twice in one process (tests, `npm start` before it hands over) is counted, not refused.
 */
export function lockDataDir(options: { dataDir: string; shownAs?: string }): () => void {
  const file = path.join(path.resolve(options.dataDir), 'lazarus.pid')
  const release = () => {
    const count = (held.get(file) ?? 1) - 1
    if (count > 0) return void held.set(file, count)
    held.delete(file)
    if (readPid(file) === process.pid) unlinkSync(file)
  }
  if (held.has(file)) {
    held.set(file, held.get(file)! + 1)
    return release
  }
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' })
      held.set(file, 1)
      return release
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    const pid = readPid(file)
    if (pid !== undefined && pid !== process.pid && alive(pid)) throw inUse(pid, options.shownAs ?? options.dataDir)
    // Stale: its process is gone (or the file is empty, or a leftover of this pid). Remove it and try once more.
    try {
      unlinkSync(file)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
  const pid = readPid(file)
  throw inUse(pid ?? 0, options.shownAs ?? options.dataDir)
}
