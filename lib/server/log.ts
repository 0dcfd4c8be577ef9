import 'server-only'

type Level = 'debug' | 'info' | 'warn' | 'error'
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 }
const threshold = ORDER[(process.env.LAZARUS_LOG_LEVEL as Level) ?? 'info'] ?? ORDER.info

export type Logger = Record<Level, (message: string, fields?: Record<string, unknown>) => void>

// C0 controls (newline and tab included), DEL, C1 controls (0x9b is a one-byte CSI on some terminals) and the Unicode
// line and paragraph separators: each could start a forged log line or a terminal escape sequence.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g

/** Makes any text safe for one log line: control characters become visible escapes (`\n`, `\x1b`, `\u2028`). */
export function escapeForLog(text: string): string {
  return text.replace(CONTROL, (c) => {
    if (c === '\n') return '\\n'
    if (c === '\r') return '\\r'
    if (c === '\t') return '\\t'
    const code = c.charCodeAt(0)
    return code > 0xff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\x${code.toString(16).padStart(2, '0')}`
  })
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return escapeForLog(value)
  if (value instanceof Error) return escapeForLog(value.message)
  // JSON.stringify escapes control characters inside strings, but not U+2028/U+2029.
  return escapeForLog(JSON.stringify(value) ?? String(value))
}

/**
 * One line per event, `[scope] message key=value`, readable in a terminal and greppable in CI. Every value that
 * reaches a log line goes through here, escaped: queue names, error texts and header values come from the network.
 */
export function logger(scope: string): Logger {
  const write = (level: Level) => (message: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < threshold) return
    const extra = fields ? ' ' + Object.entries(fields).map(([k, v]) => `${escapeForLog(k)}=${formatValue(v)}`).join(' ') : ''
    const line = `${new Date().toISOString()} ${level.toUpperCase()} [${escapeForLog(scope)}] ${escapeForLog(message)}${extra}`
    if (level === 'error' || level === 'warn') console.error(line)
    else console.log(line)
  }
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }
}
