import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig } from '@/lib/server/platform/config'
import { runInRequest } from '@/lib/server/platform/request-context'
import { createLogger, type LogFormat, type LogLevel } from '@/lib/server/platform/log'

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

  it('drops lines below its level', () => {
    const { log, lines } = capture('json', 'warn')
    log.debug('no')
    log.info('no')
    log.warn('yes')
    log.error('yes')
    expect(lines.map((l) => JSON.parse(l).level)).toEqual(['warn', 'error'])
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
