import 'server-only'

type Level = 'debug' | 'info' | 'warn' | 'error'
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 }
const threshold = ORDER[(process.env.LAZARUS_LOG_LEVEL as Level) ?? 'info'] ?? ORDER.info

export type Logger = Record<Level, (message: string, fields?: Record<string, unknown>) => void>

/** One line per event, `[scope] message key=value`, readable in a terminal and greppable in CI. */
export function logger(scope: string): Logger {
  const write = (level: Level) => (message: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < threshold) return
    const extra = fields ? ' ' + Object.entries(fields).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ') : ''
    const line = `${new Date().toISOString()} ${level.toUpperCase()} [${scope}] ${message}${extra}`
    if (level === 'error' || level === 'warn') console.error(line)
    else console.log(line)
  }
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }
}
