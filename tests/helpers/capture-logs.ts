import { setLogOutput, setNoticeOutput } from '@/lib/server/platform/log'

/** One line of the process logger, as JSON: what a log collector reads. */
export type LogEntry = { level: string; time: string; scope: string; msg: string; requestId?: string } & Record<string, unknown>

/**
 * Runs `fn` with the process logger's lines collected (as JSON, whatever stdout is) instead of written to stdout, and
 * the console notices (consoleNotice, stderr) as the text they would print.
 */
export async function captureLogs<T>(fn: () => Promise<T>): Promise<{ result: T; entries: LogEntry[]; notices: string[] }> {
  const entries: LogEntry[] = []
  const notices: string[] = []
  const restore = setLogOutput({ format: 'json', write: (line) => void entries.push(JSON.parse(line) as LogEntry) })
  const restoreNotices = setNoticeOutput((text) => void notices.push(text))
  try {
    return { result: await fn(), entries, notices }
  } finally {
    restoreNotices()
    restore()
  }
}
