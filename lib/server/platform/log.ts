import 'server-only'
import { pino, type Logger as PinoLogger } from 'pino'
import { perProcess } from '@/lib/server/platform/per-process'
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

/** How many causes deep `cause` follows a chain (a cause may, in principle, point back at the error). */
const MAX_CAUSES = 5

/** `stack` and `cause` of a logged `error`, unless the line sets them itself. */
function errorDetails(error: Error, fields: Record<string, unknown>): Record<string, unknown> {
  const details: Record<string, unknown> = {}
  if (!('stack' in fields) && error.stack) details.stack = error.stack
  if (!('cause' in fields) && error.cause !== undefined) details.cause = describeCauses(error)
  return details
}

/** The chain of causes, each as its stack (which begins with its name and message), one after the other. */
function describeCauses(error: Error): string {
  const parts: string[] = []
  const seen = new Set<unknown>([error])
  for (let cause = error.cause; cause !== undefined && !seen.has(cause) && parts.length < MAX_CAUSES; cause = cause instanceof Error ? cause.cause : undefined) {
    seen.add(cause)
    parts.push(cause instanceof Error ? (cause.stack ?? `${cause.name}: ${cause.message}`) : describeValue(cause))
  }
  return parts.join('\ncaused by: ')
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return value
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    // A BigInt or a cyclic object.
    return String(value)
  }
}

function bind(scope: string, root: () => PinoLogger): Logger {
  const write = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    const target = root()
    if (!target.isLevelEnabled(level)) return
    const entry: Record<string, unknown> = { scope }
    // An Error serialises to `{}` in JSON: log its message, as the text format always has.
    if (fields) for (const key of Object.keys(fields)) entry[key] = fields[key] instanceof Error ? (fields[key] as Error).message : fields[key]
    // The `error` of a line is what went wrong: its stack and cause too, where whoever reads the log looks for them.
    if (fields?.error instanceof Error) Object.assign(entry, errorDetails(fields.error, fields))
    target[level](entry, message)
  }
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }
}

type LogState = { level: LogLevel; output: LogOutput; root: PinoLogger | null; notice?: (text: string) => void }

// One state per process (per-process.ts): Next bundles this module more than once, and the level the configuration
// sets, or the output a test installs, holds for every copy.
const state = perProcess<LogState>('log', () => ({
  level: 'info',
  // Both formats go to stdout, in order. process.stdout writes synchronously to files, pipes and terminals on Linux,
  // so nothing logged just before process.exit is lost.
  output: { format: process.stdout.isTTY ? 'text' : 'json', write: (line: string) => void process.stdout.write(line) },
  root: null,
}))

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

const writeStderr = (text: string) => void process.stderr.write(text)

/**
 * A few plain lines for the person watching the console, framed by rules so they stand out among the log lines, on
 * stderr: what someone must act on to use Lazarus at all (the first admin's setup link). The same facts go to the log
 * too, for collectors. Each line is escaped as a log value is, so nothing in it can move the cursor or forge a line.
 */
export function consoleNotice(lines: readonly string[]): void {
  const safe = lines.map(escapeForLog)
  const rule = '='.repeat(Math.max(...safe.map((line) => line.length)))
  const write = state.notice ?? writeStderr
  write(`\n${rule}\n${safe.join('\n')}\n${rule}\n\n`)
}

/** Sends consoleNotice's text elsewhere (tests read it); returns the function that puts the previous output back. */
export function setNoticeOutput(write: (text: string) => void): () => void {
  const previous = state.notice
  state.notice = write
  return () => {
    state.notice = previous
  }
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
