import 'server-only'
import { pino, type Logger as PinoLogger } from 'pino'
import { currentRequestId } from '@/lib/server/platform/request-context'

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** `json`: one JSON object per line, for collectors. `text`: one readable line per event, for a terminal. */
export type LogFormat = 'json' | 'text'
export type LogOutput = { format: LogFormat; write(line: string): void }

export type Logger = Record<LogLevel, (message: string, fields?: Record<string, unknown>) => void>

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

// JSON escapes C0 controls (so no value can end a line), but leaves DEL, the C1 controls and U+2028/U+2029 raw: a
// JSON line shown in a terminal (`kubectl logs`, `cat`) could still carry an escape sequence, and JavaScript readers
// older than ES2019 split lines at U+2028. They can only occur inside JSON strings, where \uXXXX means the same.
const RAW_IN_JSON = /[\u007f-\u009f\u2028\u2029]/g

function escapeJsonLine(line: string): string {
  return line.replace(RAW_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

function textValue(value: unknown): string {
  return escapeForLog(typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value)))
}

/** `2026-12-06T10:00:00.000Z WARN [drainer] message key=value …`: the JSON line pino wrote, read back and escaped. */
function textLine(json: string): string {
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(json) as Record<string, unknown>
  } catch {
    return `${escapeForLog(json.trimEnd())}\n`
  }
  const { level, time, msg, scope, pid: _pid, hostname: _hostname, ...fields } = entry
  const extra = Object.entries(fields).map(([key, value]) => ` ${escapeForLog(key)}=${textValue(value)}`).join('')
  return `${textValue(time)} ${textValue(level).toUpperCase()} [${textValue(scope)}] ${textValue(msg)}${extra}\n`
}

function createRoot(level: LogLevel, output: LogOutput): PinoLogger {
  return pino(
    {
      level,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // The request being served (lib/server/platform/request-context.ts), on every line logged while serving it.
      mixin: () => {
        const requestId = currentRequestId()
        return requestId === null ? {} : { requestId }
      },
    },
    { write: (line: string) => output.write(output.format === 'json' ? escapeJsonLine(line) : textLine(line)) },
  )
}

function bind(scope: string, root: () => PinoLogger): Logger {
  const write = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    const target = root()
    if (!target.isLevelEnabled(level)) return
    const entry: Record<string, unknown> = { scope }
    // An Error serialises to `{}` in JSON: log its message, as the text format always has.
    if (fields) for (const key of Object.keys(fields)) entry[key] = fields[key] instanceof Error ? (fields[key] as Error).message : fields[key]
    target[level](entry, message)
  }
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }
}

type LogState = { level: LogLevel; output: LogOutput; root: PinoLogger | null }

// One state per process, on globalThis: Next bundles this module more than once (instrumentation, each route).
const STATE = Symbol.for('lazarus.log')
const state = ((globalThis as Record<symbol, unknown>)[STATE] ??= {
  level: 'info',
  // Both formats go to stdout, in order. process.stdout writes synchronously to files, pipes and terminals on Linux,
  // so nothing logged just before process.exit is lost.
  output: { format: process.stdout.isTTY ? 'text' : 'json', write: (line: string) => void process.stdout.write(line) },
  root: null,
} satisfies LogState) as LogState

const processRoot = () => (state.root ??= createRoot(state.level, state.output))

/**
 * The one logger of server code: `logger('drainer').warn('cannot connect', { error })`. Lines are JSON when stdout is
 * not a terminal and one readable line when it is; either way a value from the network (a queue name, an error text,
 * a header) cannot end the line or reach the terminal raw. A line logged while a request is served carries its id.
 */
export function logger(scope: string): Logger {
  return bind(scope, processRoot)
}

/** A logger with its own level and output, for tests of the formats. */
export function createLogger(scope: string, options: { level: LogLevel } & LogOutput): Logger {
  const root = createRoot(options.level, options)
  return bind(scope, () => root)
}

/** LAZARUS_LOG_LEVEL, validated with the rest of the configuration: lib/server/platform/config.ts applies it when it loads. */
export function setLogLevel(level: LogLevel): void {
  state.level = level
  if (state.root) state.root.level = level
}

/** Sends the process's log lines elsewhere (tests read them); returns the function that puts the previous output back. */
export function setLogOutput(output: Partial<LogOutput>): () => void {
  const previous = state.output
  state.output = { ...previous, ...output }
  state.root = null
  return () => {
    state.output = previous
    state.root = null
  }
}
