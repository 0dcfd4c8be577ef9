import { describe, expect, it } from 'vitest'
import { normaliseMessage } from '@/lib/server/ingest/normalise/message-pattern'
import { normaliseDelivery, type NormalisedDelivery } from '@/lib/server/ingest/normalise/normalise-delivery'
import type { StackLanguage } from '@/lib/server/ingest/normalise/stack-frames'
import { analyseStack } from '@/lib/server/ingest/normalise/stack-trace'
import type { DeliveryView } from '@/lib/server/ingest/types'

const NOW = new Date('2024-03-01T12:00:00Z')

/** mulberry32: a seeded PRNG, so a failing case can be replayed from its seed. */
function rng(seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number) => Math.floor(next() * n)
  const pick = <T,>(items: readonly T[]): T => items[int(items.length)]
  return { next, int, pick }
}
type Rng = ReturnType<typeof rng>

/** How much larger the second input of a growth measurement is than the first. */
const GROWTH = 4
/**
 * The smaller input's length. The CPU time per character steps up several-fold between 64,000 and 128,000 characters
 * (V8 keeps strings over 128 KiB apart, in its large-object space): measured across that step, linear work grew 20–27×
 * for 8× the input, where quadratic grows 64×. Above it, on one machine: 0.7–3.8× for 4× the input, and 18× for a
 * quadratic probe. Both inputs start above the step, so the ratio measures the code, not V8.
 */
const SMALL_CHARS = 160_000

/**
 * How the CPU time of `work` grows when its input (`make(n)`) gets GROWTH times larger: about GROWTH for linear work,
 * GROWTH² for quadratic (a backtracking pattern on a long run). CPU time of this process, not the clock, so what else
 * the machine runs counts little; the best of three runs at each size, taking turns, each repeated until the smaller
 * input costs a few milliseconds, so the clock's granularity does not count either. A property of the code, not of the
 * machine's speed.
 */
function growth(make: (n: number) => string, work: (text: string) => void): number {
  const cost = (text: string, repeat: number) => {
    const before = process.cpuUsage()
    for (let i = 0; i < repeat; i++) work(text)
    const used = process.cpuUsage(before)
    return used.user + used.system
  }
  // Far above the analysers' 16 KiB cache (lib/server/ingest/normalise/stack-trace.ts), so every run does the work.
  let n = 1_000
  while (make(n).length < SMALL_CHARS) n *= 2
  const small = make(n)
  const large = make(n * GROWTH)
  // Once each first, so neither size pays for compiling the code; then the sizes take turns, so a busy moment of the
  // machine weighs on both.
  cost(large, 1)
  const repeat = Math.min(100, Math.ceil(3_000 / Math.max(1, cost(small, 1))))
  let bestSmall = Infinity
  let bestLarge = Infinity
  for (let run = 0; run < 3; run++) {
    bestSmall = Math.min(bestSmall, cost(small, repeat))
    bestLarge = Math.min(bestLarge, cost(large, repeat))
  }
  return bestLarge / Math.max(1, bestSmall)
}

const HEADER_NAMES = [
  'x-death', 'x-first-death-queue', 'x-first-death-reason', 'x-first-death-exchange', 'x-last-death-reason', 'x-delivery-count',
  'x-acquired-count', 'x-error-type', 'x-error-message', 'x-error-stack', 'x-failure-kind', 'x-service', 'x-service-version',
  'x-entity-key', 'x-lazarus-origin-id', 'x-lazarus-replay-count', 'NServiceBus.ExceptionInfo.ExceptionType',
  'NServiceBus.ExceptionInfo.InnerExceptionType', 'NServiceBus.ExceptionInfo.Message', 'NServiceBus.ExceptionInfo.StackTrace',
  'NServiceBus.FailedQ', 'NServiceBus.TimeOfFailure', 'NServiceBus.ProcessingEndpoint', 'NServiceBus.EnclosedMessageTypes',
  'MT-Reason', 'MT-Fault-ExceptionType', 'MT-Fault-Message', 'MT-Fault-StackTrace', 'MT-Fault-Timestamp', 'MT-Fault-InputAddress',
  'MT-Fault-RetryCount', 'MT-Host-Assembly', 'MT-Host-AssemblyVersion', 'x-exception-message', 'x-exception-stacktrace',
  'x-original-exchange', 'x-original-routingKey', 'retry-count', '__TypeId__', 'rbs2-error-details', 'rbs2-source-queue',
  'rbs2-msg-type', 'exception-type', 'exception-message', 'exception-stack', 'failed-at', 'original-destination', 'attempts',
  'X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\ErrorDetailsStamp',
  'X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\RedeliveryStamp', 'type', 'lang', 'task', 'id', 'retries',
  'HandledCount', 'MessageType', 'Topic', '__proto__', 'constructor', 'toString', '!', 'value',
]

const SNIPPETS = [
  '\tat com.acme.Foo.bar(Foo.java:12)', 'Caused by: ', '   at Acme.X.<Handle>d__3.MoveNext() in /x.cs:line 9', ' ---> ',
  '--- End of inner exception stack trace ---', 'Traceback (most recent call last):', '  File "/a/b.py", line 3, in f',
  'The above exception was the direct cause of the following exception:', '#0 /a.php(1): A->b()', '#1 {main}', 'Next ',
  '    at f (/a/b.js:1:2)', 'System.Exception: ', '3 unhandled exceptions: ', '03/01/2024 10:15:30 +00:00: ', 'x-death',
  'EasyNetQ.SystemMessages.Error, EasyNetQ', 'Symfony\\\\Component\\\\Messenger\\\\Envelope', 'exceptionClass\\";s:99999:\\"',
  'retryCount\\";i:7;', '\u0000', '\uD800', '\uFFFF', '💥', '"', "'", '\\', '{', '[', '2024-03-01T10:15:30Z', '0x7fff',
  'rabbitmq://queue/', 'rabbitmq://host/vhost/q?x=1', '2024-02-30 25:61:61:1234567 Z', '99999999999999999999', '-1', 'NaN',
]

function randomString(r: Rng): string {
  const parts: string[] = []
  const n = r.int(12)
  for (let i = 0; i < n; i++) {
    const roll = r.int(6)
    if (roll === 0) parts.push(String.fromCharCode(...Array.from({ length: r.int(20) }, () => r.int(0x10000))))
    else if (roll === 1) parts.push('\n')
    else if (roll === 2) parts.push(r.pick(SNIPPETS).repeat(1 + r.int(3)))
    else parts.push(r.pick(SNIPPETS))
  }
  if (r.int(50) === 0) parts.push(r.pick(SNIPPETS).repeat(5000))
  return parts.join('')
}

function randomValue(r: Rng, depth = 0): unknown {
  switch (r.int(depth > 2 ? 9 : 13)) {
    case 0: return randomString(r)
    case 1: return Buffer.from(randomString(r))
    case 2: return Buffer.from(Array.from({ length: r.int(64) }, () => r.int(256)))
    case 3: return r.pick([0, -1, 1, 2.5, 1e15, -1e300, Number.NaN, Infinity, Number.MAX_SAFE_INTEGER, 1709288130, 1709288130123])
    case 4: return r.pick([0n, -5n, 2n ** 70n, 1709288130n])
    case 5: return r.pick([true, false, null, undefined])
    case 6: return r.pick([new Date(Number.NaN), new Date('2024-03-01T10:00:00Z'), new Date('2999-01-01T00:00:00Z'), new Date(0)])
    case 7: return { '!': r.pick(['timestamp', 'long', 'decimal']), value: randomValue(r, depth + 1) }
    case 8: return r.pick(['rejected', 'expired', 'maxlen', 'delivery_limit', 'invalid', 'transient', ''])
    case 9:
    case 10: return Array.from({ length: r.int(6) }, () => randomValue(r, depth + 1))
    default: {
      const obj: Record<string, unknown> = {}
      const keys = ['queue', 'reason', 'count', 'time', 'exchange', 'routing-keys', 'original-expiration', ...HEADER_NAMES]
      for (let i = r.int(8); i > 0; i--) Object.defineProperty(obj, r.pick(keys), { value: randomValue(r, depth + 1), enumerable: true, configurable: true, writable: true })
      return obj
    }
  }
}

function randomBody(r: Rng): unknown {
  switch (r.int(8)) {
    case 0: return Buffer.from(Array.from({ length: r.int(512) }, () => r.int(256)))
    case 1: return Buffer.from(randomString(r))
    case 2: {
      const fields = ['RoutingKey', 'Exchange', 'Queue', 'Exception', 'Message', 'DateTime', 'BasicProperties']
      const obj = Object.fromEntries(fields.filter(() => r.int(4) > 0).map((f) => [f, randomValue(r, 1)]))
      return Buffer.from(JSON.stringify(obj, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) ?? '')
    }
    case 3: return Buffer.from(`${'['.repeat(20000)}${']'.repeat(20000)}`)
    case 4: return Buffer.from(`O:36:"${randomString(r)}Symfony\\\\Component\\\\Messenger\\\\Envelope${randomString(r)}`)
    case 5: return r.pick([undefined, null, 'a string body', 42, {}])
    default: return Buffer.from(JSON.stringify({ order: { id: randomString(r) }, n: r.int(100) }))
  }
}

function randomDelivery(r: Rng): DeliveryView {
  const headers: Record<string, unknown> = {}
  for (let i = r.int(14); i > 0; i--) {
    Object.defineProperty(headers, r.pick(HEADER_NAMES), { value: randomValue(r), enumerable: true, configurable: true, writable: true })
  }
  const properties: Record<string, unknown> = {}
  for (const name of ['type', 'appId', 'contentEncoding', 'correlationId', 'messageId', 'timestamp']) {
    if (r.int(3) === 0) properties[name] = name === 'type' && r.int(2) === 0 ? 'EasyNetQ.SystemMessages.Error, EasyNetQ' : randomValue(r)
  }
  const rule = r.pick<unknown>([
    undefined,
    null,
    { kind: 'jsonPointer', pointer: r.pick(['/order/id', '', '/x/~2', 'bad', '/__proto__/x', '/0/0/0']) },
    { kind: 'header', name: r.pick(HEADER_NAMES) },
    { kind: 'property', name: r.pick(['correlationId', 'messageId', 'headers', '__proto__']) },
    randomValue(r),
  ])
  const delivery = {
    queue: r.int(10) === 0 ? randomValue(r) : r.pick(['orders.dlq', 'x_error', 'a.b.dlq', 'error', '']),
    exchange: r.int(10) === 0 ? randomValue(r) : 'DLX',
    routingKey: r.int(10) === 0 ? randomValue(r) : r.pick(['error.orders', 'a.b', '']),
    redelivered: r.int(2) === 0,
    properties: r.int(20) === 0 ? randomValue(r) : properties,
    headers: r.int(20) === 0 ? randomValue(r) : headers,
    body: randomBody(r),
    entityKeyRule: rule,
  }
  return delivery as unknown as DeliveryView
}

const FRAMEWORKS = [
  'lazarus', 'nservicebus', 'masstransit', 'spring-amqp', 'spring-cloud-stream', 'rebus', 'wolverine', 'easynetq', 'symfony',
  'celery', 'brighter', 'plain-dlx', 'unknown',
]
const KINDS = ['invalid', 'transient', 'exhausted', 'expired', 'overflow', 'delivery-limit', 'unknown']

function expectWellFormed(result: NormalisedDelivery): void {
  // normalise-failed means an internal exception was swallowed by the last-resort guard: that is a bug too.
  expect(result.flags).not.toContain('normalise-failed')
  expect(FRAMEWORKS).toContain(result.framework)
  expect(KINDS).toContain(result.failureKind)
  expect(result.signature).toMatch(/^v1:[0-9a-f]{16}$/)
  expect(result.title.length).toBeGreaterThan(0)
  expect(result.title.length).toBeLessThanOrEqual(120)
  expect(result.attempts === null || (Number.isSafeInteger(result.attempts) && result.attempts >= 0)).toBe(true)
  expect(Number.isSafeInteger(result.lineage.replayCount) && result.lineage.replayCount >= 0).toBe(true)
  for (const date of [result.failedAt, result.firstDeathAt, result.lastDeathAt, ...result.xDeath.map((e) => e.time)]) {
    expect(date === null || (date instanceof Date && !Number.isNaN(date.getTime()))).toBe(true)
  }
  const texts = [
    result.errorType, result.errorMessage, result.errorStack, result.service, result.serviceVersion, result.entityKey,
    result.deathReason, result.messagePattern, result.title, result.origin.exchange, result.origin.queue, result.messageType,
    result.lineage.originId, ...result.origin.routingKeys, ...result.flags,
    ...result.xDeath.flatMap((e) => [e.queue, e.reason, e.exchange, e.originalExpiration, ...e.routingKeys]),
  ]
  for (const text of texts) {
    expect(text === null || typeof text === 'string').toBe(true)
    if (text) expect(text.includes('\u0000')).toBe(false)
  }
  expect((result.errorStack ?? '').length).toBeLessThanOrEqual(64 * 1024)
  expect((result.errorMessage ?? '').length).toBeLessThanOrEqual(64 * 1024)
}

describe('normaliseDelivery never throws (fuzz)', () => {
  it('survives 3000 random hostile deliveries', () => {
    for (let seed = 1; seed <= 3000; seed++) {
      const input = randomDelivery(rng(seed))
      let result: NormalisedDelivery | undefined
      expect(() => (result = normaliseDelivery(input, { now: NOW })), `seed ${seed}`).not.toThrow()
      try {
        expectWellFormed(result!)
      } catch (error) {
        throw new Error(`seed ${seed}: ${(error as Error).message}`)
      }
    }
  }, 60_000)

  it('is deterministic', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const a = normaliseDelivery(randomDelivery(rng(seed)), { now: NOW })
      const b = normaliseDelivery(randomDelivery(rng(seed)), { now: NOW })
      expect(b).toEqual(a)
    }
  })

  it('accepts inputs that are not deliveries at all', () => {
    for (const input of [null, undefined, 42, 'x', [], {}, { headers: null, body: null }, Object.create(null)]) {
      expectWellFormed(normaliseDelivery(input as unknown as DeliveryView, { now: NOW }))
    }
  })

  /**
   * Inputs shaped against the parsers' patterns, each made at any size `n` (in repeats of its bait). A backtracking
   * pattern goes quadratic on them; the parsers must stay linear.
   */
  const pathological: Array<[string, (n: number) => string]> = [
    ['dotted hostname bait', (n) => `${'a.'.repeat(n)}x`],
    ['email bait', (n) => `${'a'.repeat(n)}@`],
    ['ipv6 bait', (n) => '1:'.repeat(n)],
    ['frame bait', (n) => '\tat x('.repeat(n)],
    ['.NET arrow bait', (n) => ' ---> '.repeat(n)],
    ['Caused by bait', (n) => 'Caused by: X: y\n'.repeat(n)],
    ['digits', (n) => '1'.repeat(n)],
    ['quotes', (n) => "'".repeat(n)],
    ['paths', (n) => '/a'.repeat(n)],
    ['rebus blocks', (n) => `9 unhandled exceptions: ${'01/01/2024 00:00:00 +00:00: System.X: y\n\n'.repeat(Math.ceil(n / 40))}`],
    ['lines', (n) => '\n'.repeat(n)],
    ['rule bait in a type name', (n) => 'Validation'.repeat(n)],
    // Lines shaped against each frame pattern's quantifiers: long lines, many of them.
    ['.NET frame suffix bait', (n) => `System.X: y\n${`   at a(${') in '.repeat(380)}x\n`.repeat(Math.ceil(n / 2000))}`],
    ['Node location bait', (n) => `Error: y\n${`    at f${' (x'.repeat(600)}) y\n`.repeat(Math.ceil(n / 2000))}`],
    ['Python trailing-space bait', (n) => `Traceback (most recent call last):\n${`  File "a", line 1, in ${' '.repeat(1900)}x\n`.repeat(Math.ceil(n / 2000))}`],
    ['PHP frame bait', (n) => `#1 ${'(1): '.repeat(390)} x\n`.repeat(Math.ceil(n / 2000))],
    ['Java frame bait', (n) => `\tat ${'a('.repeat(900)}x\n`.repeat(Math.ceil(n / 2000))],
  ]
  const headerNames = ['x-error-type', 'x-error-message', 'x-error-stack', 'MT-Fault-StackTrace', 'rbs2-error-details', 'x-exception-stacktrace']
  const deliveryWith = (name: string, text: string): DeliveryView => ({
    queue: 'q',
    exchange: '',
    routingKey: '',
    redelivered: false,
    properties: {},
    headers: { [name]: text, 'x-exception-message': text.slice(0, 5000) },
    body: Buffer.from(text),
    entityKeyRule: { kind: 'jsonPointer', pointer: '/a' },
  })

  it.each(pathological)('stays linear on %s', (_name, make) => {
    for (const name of headerNames) expectWellFormed(normaliseDelivery(deliveryWith(name, make(40_000)), { now: NOW }))
    const ratio = growth(make, (text) => {
      for (const name of headerNames) normaliseDelivery(deliveryWith(name, text), { now: NOW })
    })
    expect(ratio, `CPU time ${GROWTH}× the input: linear work grows about ${GROWTH}×, quadratic ${GROWTH ** 2}×`).toBeLessThan(GROWTH * 2)
  })

  // Backtracking regexes go quadratic on long runs of whitespace inside a message; every parser must not.
  const withRun: Array<[StackLanguage, (run: string) => string]> = [
    ['java', (run) => `java.lang.X: x${run}y\n\tat a.B.c(B.java:1)`],
    ['dotnet', (run) => `System.X: x${run}y\n   at A.B.C() in /a.cs:line 1`],
    ['python', (run) => `Traceback (most recent call last):\n  File "a", line 1, in f\nValueError: x${run}y`],
    ['php', (run) => `App\\X: x${run}y in /a.php:1\nStack trace:\n#0 {main}`],
    ['node', (run) => `Error: x${run}y\n    at f (/a.js:1:2)`],
  ]
  it.each(withRun)('parses a %s header with a long whitespace run in linear time', (language, shape) => {
    const analysis = analyseStack(shape(' '.repeat(200_000)), { hint: language })
    expect(analysis.root?.message?.endsWith('y')).toBe(true)
    expect(normaliseMessage(analysis.root?.message)).toBe('x')
    const ratio = growth((n) => shape(' '.repeat(n)), (text) => normaliseMessage(analyseStack(text, { hint: language }).root?.message))
    expect(ratio, `CPU time ${GROWTH}× the input: linear work grows about ${GROWTH}×, quadratic ${GROWTH ** 2}×`).toBeLessThan(GROWTH * 2)
  })
})
