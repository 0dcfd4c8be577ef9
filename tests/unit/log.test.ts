import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig } from '@/lib/server/platform/config'
import { runInRequest } from '@/lib/server/platform/request-context'
import { consoleNotice, createLogger, setNoticeOutput, type LogFormat, type LogLevel } from '@/lib/server/platform/log'

function capture(format: LogFormat, level: LogLevel = 'debug') {
  const lines: string[] = []
  const log = createLogger('drainer', { format, level, write: (line) => void lines.push(line) })
  return { log, lines }
}

// A queue name or error text from the network that tries to end the line, forge the next one and colour the terminal.
const HOSTILE = 'orders\n2026-12-06T00:00:00.000Z ERROR [api] forged\r\u001b[31mred\u001b[0m\u009b2J\u007f\u2028\u2029end'
// Anything a terminal could act on: C0 (newline included), DEL, C1, and the Unicode line and paragraph separators.
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/

describe('the logger', () => {
  it('writes one JSON object per line off a terminal: level, time, scope, message and fields', () => {
    const { log, lines } = capture('json')
    log.warn('cannot connect', { queue: 'orders.dlq', retryInMs: 500, error: new Error('ECONNREFUSED') })
    expect(lines).toHaveLength(1)
    expect(lines[0].endsWith('\n')).toBe(true)
    const entry = JSON.parse(lines[0])
    expect(entry).toMatchObject({ level: 'warn', scope: 'drainer', msg: 'cannot connect', queue: 'orders.dlq', retryInMs: 500, error: 'ECONNREFUSED' })
    expect(new Date(entry.time).toISOString()).toBe(entry.time)
    expect(entry.requestId).toBeUndefined()
  })

  it('writes one readable line on a terminal', () => {
    const { log, lines } = capture('text')
    log.info('connected to RabbitMQ', { queue: 'orders.dlq', count: 3, flags: ['a', 'b'] })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO \[drainer\] connected to RabbitMQ queue=orders\.dlq count=3 flags=\["a","b"\]\n$/)
  })

  it('puts the request id on every line logged while a request is served, in both formats', async () => {
    for (const format of ['json', 'text'] as const) {
      const { log, lines } = capture(format)
      await runInRequest({ requestId: 'req-1' }, async () => {
        log.info('inside')
        await new Promise((resolve) => setTimeout(resolve, 1))
        log.warn('after a turn of the event loop')
      })
      log.info('outside')
      if (format === 'json') expect(lines.map((l) => JSON.parse(l).requestId)).toEqual(['req-1', 'req-1', undefined])
      else expect(lines.map((l) => /requestId=(\S+)/.exec(l)?.[1])).toEqual(['req-1', 'req-1', undefined])
    }
  })

  it('keeps messages with printf-like placeholders as they are', () => {
    const { log, lines } = capture('json')
    log.info('100% done: %s %d %j')
    expect(JSON.parse(lines[0]).msg).toBe('100% done: %s %d %j')
  })

  it('prints a console notice as plain lines between rules as wide as the widest, escaped like a log value', () => {
    const printed: string[] = []
    const restore = setNoticeOutput((text) => void printed.push(text))
    try {
      consoleNotice(['Lazarus: open http://127.0.0.1:3000/setup#token=abc', `short ${HOSTILE}`])
    } finally {
      restore()
    }
    expect(printed).toHaveLength(1)
    const lines = printed[0].split('\n')
    const width = Math.max(lines[2].length, lines[3].length)
    expect(lines).toEqual(['', '='.repeat(width), 'Lazarus: open http://127.0.0.1:3000/setup#token=abc', expect.stringMatching(/^short orders\\n2026/), '='.repeat(width), '', ''])
    expect(printed[0]).not.toMatch(RAW_CONTROL)
  })

  it('drops lines below its level', () => {
    const { log, lines } = capture('json', 'warn')
    log.debug('no')
    log.info('no')
    log.warn('yes')
    log.error('yes')
    expect(lines.map((l) => JSON.parse(l).level)).toEqual(['warn', 'error'])
  })

  describe('an Error as the `error` of a line', () => {
    function failure() {
      const root = new TypeError('socket hang up')
      const middle = new Error('cannot reach the broker', { cause: root })
      return { root, middle, error: new Error('cannot publish pause events', { cause: middle }) }
    }

    it('keeps its message, its stack and the stacks of its causes, in JSON', () => {
      const { log, lines } = capture('json')
      const { root, middle, error } = failure()
      log.warn('publish failed', { error })
      const entry = JSON.parse(lines[0])
      expect(entry.error).toBe('cannot publish pause events')
      expect(entry.stack).toBe(error.stack)
      expect(entry.stack).toMatch(/^Error: cannot publish pause events\n\s+at /)
      expect(entry.cause).toBe(`${middle.stack}\ncaused by: ${root.stack}`)
      expect(entry.cause).toMatch(/^Error: cannot reach the broker\n[\s\S]*\ncaused by: TypeError: socket hang up\n\s+at /)
    })

    it('keeps them on its one line as text, the newlines escaped', () => {
      const { log, lines } = capture('text')
      log.warn('publish failed', { error: failure().error })
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(/ error=cannot publish pause events stack=Error: cannot publish pause events\\n\s+at .* cause=Error: cannot reach the broker\\n.*\\ncaused by: TypeError: socket hang up\\n/)
    })

    it('gives a cause that is not an Error as its value, and follows a cycle of causes only once', () => {
      const { log, lines } = capture('json')
      log.error('refused', { error: new Error('refused', { cause: { code: 'ECONNREFUSED', port: 5672 } }) })
      expect(JSON.parse(lines[0]).cause).toBe('{"code":"ECONNREFUSED","port":5672}')
      const a = new Error('a')
      const b = new Error('b', { cause: a })
      a.cause = b
      log.error('loop', { error: a })
      expect(JSON.parse(lines[1]).cause).toBe(b.stack)
    })

    it('leaves a stack or cause the line sets itself, and an error without a cause without one', () => {
      const { log, lines } = capture('json')
      log.error('explicit', { error: new Error('x', { cause: 'y' }), stack: 'given', cause: 'given too' })
      log.error('plain', { error: new Error('no cause') })
      expect(JSON.parse(lines[0])).toMatchObject({ error: 'x', stack: 'given', cause: 'given too' })
      expect(JSON.parse(lines[1])).not.toHaveProperty('cause')
    })

    it('logs an Error under another name by its message only, as before', () => {
      const { log, lines } = capture('json')
      log.warn('retrying', { lastError: new Error('timeout') })
      const entry = JSON.parse(lines[0])
      expect(entry.lastError).toBe('timeout')
      expect(entry).not.toHaveProperty('stack')
    })
  })

  describe('a value with newlines and terminal escapes cannot forge a line or reach the terminal raw', () => {
    it('as JSON: escaped by JSON, plus DEL, C1 and U+2028/2029; the value reads back exactly', () => {
      const { log, lines } = capture('json')
      log.error(HOSTILE, { queue: HOSTILE, [HOSTILE]: 'key', nested: { reason: HOSTILE } })
      expect(lines).toHaveLength(1)
      const line = lines[0]
      expect(line.indexOf('\n')).toBe(line.length - 1)
      expect(line.slice(0, -1)).not.toMatch(RAW_CONTROL)
      const entry = JSON.parse(line)
      expect(entry.msg).toBe(HOSTILE)
      expect(entry.queue).toBe(HOSTILE)
      expect(entry[HOSTILE]).toBe('key')
      expect(entry.nested.reason).toBe(HOSTILE)
    })

    it('as text: every control character becomes a visible escape', () => {
      const { log, lines } = capture('text')
      log.error(HOSTILE, { queue: HOSTILE, [HOSTILE]: 'key', nested: { reason: HOSTILE } })
      expect(lines).toHaveLength(1)
      const line = lines[0]
      expect(line.indexOf('\n')).toBe(line.length - 1)
      expect(line.slice(0, -1)).not.toMatch(RAW_CONTROL)
      expect(line).toContain('[drainer] orders\\n2026-12-06T00:00:00.000Z ERROR [api] forged\\r\\x1b[31mred\\x1b[0m\\x9b2J\\x7f\\u2028\\u2029end')
      expect(line).toContain(' queue=orders\\n2026')
    })
  })
})

describe('LAZARUS_LOG_LEVEL', () => {
  it('is info unless set', () => {
    expect(parseConfig({}).LAZARUS_LOG_LEVEL).toBe('info')
  })

  it.each(['debug', 'info', 'warn', 'error'])('accepts %s', (level) => {
    expect(parseConfig({ LAZARUS_LOG_LEVEL: level }).LAZARUS_LOG_LEVEL).toBe(level)
  })

  it.each(['verbose', 'INFO', 'trace', '10'])('refuses %s, naming the variable', (level) => {
    expect(() => parseConfig({ LAZARUS_LOG_LEVEL: level })).toThrow(ConfigError)
    try {
      parseConfig({ LAZARUS_LOG_LEVEL: level })
    } catch (error) {
      expect((error as ConfigError).problems).toEqual([{ variable: 'LAZARUS_LOG_LEVEL', problem: expect.stringMatching(/debug.*info.*warn.*error/) }])
      expect((error as Error).message).toMatch(/^Invalid configuration:\n {2}LAZARUS_LOG_LEVEL: /)
    }
  })
})
