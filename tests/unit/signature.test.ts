import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { computeErrorSignature, fingerprint, shortTypeName, type SignatureInput } from '@/lib/server/ingest/normalise/error-signature'
import { normaliseMessage } from '@/lib/server/ingest/normalise/message-pattern'
import { firstInAppFrames, isInAppFrame, parseFrameLine, type StackLanguage } from '@/lib/server/ingest/normalise/stack-frames'
import { analyseStack } from '@/lib/server/ingest/normalise/stack-trace'

const noFallback = { queue: null, reason: null, messageType: null }

function signatureOf(input: Partial<SignatureInput>): string {
  return computeErrorSignature({ errorType: null, errorMessage: null, frames: [], fallback: noFallback, ...input }).signature
}

function signatureOfTrace(trace: string, type: string | null = null, message: string | null = null): string {
  const analysis = analyseStack(trace)
  return signatureOf({ errorType: type ?? analysis.root?.type ?? null, errorMessage: message ?? analysis.root?.message, frames: analysis.frames })
}

describe('fingerprint', () => {
  it('is "v1:" + the first 16 hex chars of sha256 over the parts joined by newlines', () => {
    const expected = createHash('sha256').update('a\nb').digest('hex').slice(0, 16)
    expect(fingerprint(['a', 'b'])).toBe(`v1:${expected}`)
  })
})

describe('normaliseMessage (Sentry order, then the Lazarus rules)', () => {
  const cases: Array<[string, string]> = [
    ['Order 12345 not found', 'Order <int> not found'],
    ['User bob.smith+test@example.co.uk is blocked', 'User <email> is blocked'],
    ['GET https://api.example.com/v1/orders?id=5&token=abc failed', 'GET <url> failed'],
    ['Cannot reach db.internal.example.com', 'Cannot reach <hostname>'],
    ['Connection to 10.0.0.5 refused', 'Connection to <ip> refused'],
    ['Connection to [2001:db8::1] refused', 'Connection to [<ip>] refused'],
    ['Entity 3f2504e0-4f89-11d3-9a0c-0305e82c3301 missing', 'Entity <uuid> missing'],
    ['Commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 missing', 'Commit <sha1> missing'],
    ['Digest 9e107d9d372bb6826bd81d3542a419d6 mismatch', 'Digest <md5> mismatch'],
    ['Expired at 2024-03-01T10:15:30.123Z', 'Expired at <date>'],
    ['Sent Fri, 01 Mar 2024 10:15:30 GMT', 'Sent <date>'],
    ['Took 1500ms', 'Took <duration>'],
    ['Pointer 0x7ffd5e8c is invalid', 'Pointer <hex> is invalid'],
    ['Price 12.50 rejected', 'Price <float> rejected'],
    ['limit=true name="bob"', 'limit=<bool> name=<quoted_str>'],
    ["Order 'ORD-77' has no lines", 'Order <str> has no lines'],
    ['Key "orders_pkey" violated', 'Key <str> violated'],
    ["Can't parse customer's file", "Can't parse customer's file"],
    ['Job 01HQZX3K9M7N2P4R5S6T7V8W9X failed', 'Job <id> failed'],
    ['Token ab12cd34ef56 rejected', 'Token <hex> rejected'],
    ['Ref ORD123456789 invalid', 'Ref <id> invalid'],
    ['Order #ord_123456 lost', 'Order #ord_<int> lost'],
    ['Missing /var/www/app/config/app.yml', 'Missing <path>'],
    ['Missing C:\\inetpub\\wwwroot\\web.config', 'Missing <path>'],
    ['and/or stays', 'and/or stays'],
    ['  many\n\n   spaces\there  ', 'many spaces here'],
    ['', ''],
  ]
  it.each(cases)('%j → %j', (input, expected) => {
    expect(normaliseMessage(input) ?? '').toBe(expected)
  })

  it('cuts the pattern at 256 characters', () => {
    expect(normaliseMessage('word '.repeat(200))!.length).toBe(256)
  })
})

describe('signature stability', () => {
  const sameType = 'com.acme.OrderRejectedException'
  const variants: Array<[string, string, string]> = [
    ['ids', 'Order 1001 rejected for customer 42', 'Order 99817 rejected for customer 7'],
    ['uuids', 'Saga 3f2504e0-4f89-11d3-9a0c-0305e82c3301 timed out', 'Saga 9b2e1f3a-0c4d-4e5f-8a9b-1c2d3e4f5a6b timed out'],
    ['emails', 'Mailbox alice@example.com full', 'Mailbox bob.jones@corp.example.org full'],
    ['quoted values', "Unknown currency 'XYZ' in order", 'Unknown currency "ABC" in order'],
    ['timestamps', 'Slot 2024-03-01T10:00:00Z taken', 'Slot 2025-12-31T23:30:00+01:00 taken'],
    ['hex ids', 'Blob a3f9c2e1b7d4 missing', 'Blob 0f1e2d3c4b5a missing'],
    ['paths', 'Cannot open /data/in/2024/file-1.csv', 'Cannot open /srv/x/y.csv'],
    ['hosts and ips', 'Cannot reach 10.1.2.3:5432', 'Cannot reach 192.168.0.9:6432'],
  ]
  it.each(variants)('messages differing only in %s group together', (_name, a, b) => {
    expect(signatureOf({ errorType: sameType, errorMessage: a })).toBe(signatureOf({ errorType: sameType, errorMessage: b }))
  })

  it('separates different root types with the same message', () => {
    expect(signatureOf({ errorType: 'a.FooException', errorMessage: 'boom' })).not.toBe(
      signatureOf({ errorType: 'a.BarException', errorMessage: 'boom' }),
    )
  })

  it('separates different messages when there are no frames', () => {
    expect(signatureOf({ errorType: 'X', errorMessage: 'Customer blocked' })).not.toBe(
      signatureOf({ errorType: 'X', errorMessage: 'Stock exhausted' }),
    )
  })

  const traces: Array<[StackLanguage, (line: number) => string]> = [
    [
      'java',
      (n) =>
        `com.acme.OrderRejectedException: Order ${n} rejected\n\tat com.acme.orders.Validator.check(Validator.java:${n})\n\tat com.acme.orders.Listener.onOrder(Listener.java:${n + 7})\n\tat org.springframework.amqp.X.invoke(X.java:${n + 1})`,
    ],
    [
      'dotnet',
      (n) =>
        `Acme.OrderRejectedException: Order ${n} rejected\n   at Acme.Orders.Validator.Check(Order o) in /src/Validator.cs:line ${n}\n   at Acme.Orders.Handler.<Handle>d__${n % 9}.MoveNext() in /src/Handler.cs:line ${n + 3}`,
    ],
    [
      'python',
      (n) =>
        `Traceback (most recent call last):\n  File "/srv/release-${n}/app/orders/handler.py", line ${n}, in handle\n    check(o)\n  File "/srv/release-${n}/app/orders/validator.py", line ${n + 2}, in check\n    raise OrderRejected(o.id)\norders.errors.OrderRejected: ${n}`,
    ],
    [
      'php',
      (n) =>
        `#0 /var/www/releases/${n}/src/Validator.php(${n}): App\\Orders\\Validator->check(Object(App\\Order))\n#1 /var/www/releases/${n}/src/Handler.php(${n + 1}): App\\Orders\\Handler->__invoke(Object(App\\Order))\n#2 {main}`,
    ],
    [
      'node',
      (n) =>
        `Error: Order ${n} rejected\n    at Validator.check (/app/dist/validator.js:${n}:${n + 4})\n    at async Handler.handle (/app/dist/handler.js:${n + 2}:9)\n    at process.processTicksAndRejections (node:internal/process/task_queues:${n}:5)`,
    ],
  ]
  it.each(traces)('ignores line numbers, columns and paths in %s frames', (language, trace) => {
    const a = analyseStack(trace(17), { hint: language })
    expect(a.language).toBe(language)
    expect(a.frames.length).toBeGreaterThan(0)
    const type = language === 'php' ? 'App\\Orders\\Rejected' : null
    expect(signatureOfTrace(trace(17), type)).toBe(signatureOfTrace(trace(402), type))
  })

  it('does not hash the message when frames exist', () => {
    const trace = traces[0][1](10)
    expect(signatureOfTrace(trace, null, 'Order 5 rejected: customer blocked')).toBe(
      signatureOfTrace(trace, null, 'Completely different text'),
    )
  })

  it('hashes at most three in-app frames, falling back to the top frame', () => {
    const frames = ['a.A.one', 'a.A.two', 'a.A.three', 'a.A.four'].map((fn) => ({ fn, file: null, library: false }))
    const result = computeErrorSignature({ errorType: 'T', errorMessage: 'm', frames, fallback: noFallback })
    expect(result.parts).toEqual(['T', 'a.A.one', 'a.A.two', 'a.A.three'])
    // The frames hashed are kept on the group: they tell apart groups whose titles read the same (defect 10).
    expect(result.frames).toEqual(['a.A.one', 'a.A.two', 'a.A.three'])
    const library = [{ fn: 'java.lang.Thread.run', file: null, library: false }]
    const top = computeErrorSignature({ errorType: 'T', errorMessage: 'm', frames: library, fallback: noFallback })
    expect(top.parts).toEqual(['T', 'java.lang.Thread.run'])
    expect(top.frames).toEqual(['java.lang.Thread.run'])
    expect(computeErrorSignature({ errorType: 'T', errorMessage: 'm', frames: [], fallback: noFallback }).frames).toEqual([])
  })

  it('honours an in-app allow-list', () => {
    const frames = ['Npgsql.Read', 'Acme.Orders.Save'].map((fn) => ({ fn, file: null, library: false }))
    const result = computeErrorSignature({
      errorType: 'T',
      errorMessage: null,
      frames,
      fallback: noFallback,
      frameOptions: { inAppPrefixes: ['Acme.'] },
    })
    expect(result.parts).toEqual(['T', 'Acme.Orders.Save'])
  })

  it('groups deliveries without error metadata by first-death queue, reason and message type', () => {
    const a = computeErrorSignature({ errorType: null, errorMessage: null, frames: [], fallback: { queue: 'q', reason: 'rejected', messageType: 'T' } })
    const b = computeErrorSignature({ errorType: null, errorMessage: null, frames: [], fallback: { queue: 'q', reason: 'rejected', messageType: 'T' } })
    const c = computeErrorSignature({ errorType: null, errorMessage: null, frames: [], fallback: { queue: 'q', reason: 'expired', messageType: 'T' } })
    expect(a.signature).toBe(b.signature)
    expect(a.signature).not.toBe(c.signature)
    expect(a.title).toBe('no error metadata: rejected in q (T)')
  })

  it('builds a title of at most 120 characters from the short type and the pattern', () => {
    const result = computeErrorSignature({
      errorType: 'com.acme.VeryLongException',
      errorMessage: 'x'.repeat(300),
      frames: [],
      fallback: noFallback,
    })
    expect(result.title.startsWith('VeryLongException: xxx')).toBe(true)
    expect(result.title).toHaveLength(120)
  })
})

describe('shortTypeName', () => {
  const cases: Array<[string, string]> = [
    ['com.acme.InvalidOrderException', 'InvalidOrderException'],
    ['App\\Exception\\Foo', 'Foo'],
    ['System.AggregateException, System.Private.CoreLib', 'AggregateException'],
    ['Acme.Outer+InnerException', 'InnerException'],
    ['ZodError', 'ZodError'],
  ]
  it.each(cases)('%s → %s', (type, short) => expect(shortTypeName(type)).toBe(short))
})

describe('frame parsing and canonicalisation', () => {
  const cases: Array<[StackLanguage, string, string | null]> = [
    ['java', '\tat com.acme.Foo.bar(Foo.java:42)', 'com.acme.Foo.bar'],
    ['java', '\tat java.base/java.lang.Thread.run(Thread.java:1583)', 'java.lang.Thread.run'],
    ['java', '\tat app//com.acme.Foo.bar(Foo.kt:3)', 'com.acme.Foo.bar'],
    ['java', '\tat com.acme.Foo$$Lambda$123/0x0000000800c0b040.accept(Unknown Source)', 'com.acme.Foo$$Lambda.accept'],
    ['java', '\tat com.acme.Foo$$Lambda/0x00007f3c4c2b1a38.apply(Unknown Source)', 'com.acme.Foo$$Lambda.apply'],
    ['java', '\tat com.acme.Svc$$SpringCGLIB$$0.handle(<generated>)', 'com.acme.Svc$$SpringCGLIB.handle'],
    ['java', '\tat com.acme.Svc$$EnhancerBySpringCGLIB$$a1b2c3.handle(<generated>)', 'com.acme.Svc$$EnhancerBySpringCGLIB.handle'],
    ['java', '\tat jdk.internal.reflect.GeneratedMethodAccessor87.invoke(Unknown Source)', 'jdk.internal.reflect.GeneratedMethodAccessor.invoke'],
    ['java', '\tat com.acme.Foo.lambda$handle$3(Foo.java:9)', 'com.acme.Foo.lambda$handle'],
    ['java', '\t... 12 more', null],
    ['dotnet', '   at Acme.X.Handle(PlaceOrder message) in /src/X.cs:line 31', 'Acme.X.Handle'],
    ['dotnet', '   at Acme.X.<Handle>d__3.MoveNext() in C:\\src\\X.cs:line 10', 'Acme.X.Handle'],
    ['dotnet', '   at Acme.X.<>c__DisplayClass5_0.<Run>b__0(Int32 i)', 'Acme.X.Run.lambda'],
    ['dotnet', '   at Acme.X.<>c.<Run>b__3_0()', 'Acme.X.Run.lambda'],
    ['dotnet', '   at Acme.X.<>c__DisplayClass5_0.<<Run>b__0>d.MoveNext()', 'Acme.X.Run.lambda'],
    ['dotnet', '   at Acme.X.<Handle>g__Local|3_0(String s)', 'Acme.X.Handle.Local'],
    ['dotnet', '--- End of stack trace from previous location ---', null],
    ['python', '  File "/app/worker/tasks.py", line 42, in charge', 'worker.tasks.charge'],
    ['python', '  File "/usr/lib/python3.12/site-packages/celery/app/trace.py", line 453, in trace_task', 'celery.app.trace.trace_task'],
    ['php', '#0 /var/www/src/A.php(12): App\\Service\\A->run(Array)', 'App\\Service\\A->run'],
    ['php', '#1 [internal function]: App\\B->{closure:App\\B::go():12}(Array)', 'App\\B->{closure}'],
    ['php', '#2 {main}', null],
    ['node', '    at Consumer.handle [as onMessage] (/app/dist/consumer.js:41:9)', 'Consumer.handle'],
    ['node', '    at async OrderService.save (/app/dist/orders.js:4:5)', 'OrderService.save'],
    ['node', '    at /app/dist/handlers/signup.mjs:3:4', 'signup.<anonymous>'],
    ['node', '    at Object.<anonymous> (/app/dist/index.js:1:2)', 'index.<anonymous>'],
  ]
  it.each(cases)('%s %j → %s', (language, line, fn) => {
    expect(parseFrameLine(line, language)?.fn ?? null).toBe(fn)
  })

  const inApp: Array<[StackLanguage, string, boolean]> = [
    ['java', '\tat com.acme.Foo.bar(Foo.java:42)', true],
    ['java', '\tat org.springframework.amqp.X.y(X.java:1)', false],
    ['dotnet', '   at MassTransit.RetryFilter`1.Send(TContext context)', false],
    ['python', '  File "/usr/local/lib/python3.12/json/decoder.py", line 353, in raw_decode', false],
    ['python', '  File "/usr/local/lib/python3.12/site-packages/kombu/message.py", line 1, in ack', false],
    ['php', '#0 /var/www/vendor/x.php(1): Symfony\\Component\\Messenger\\Worker->run()', false],
    ['php', '#0 /var/www/vendor/x.php(1): call_user_func(Array)', false],
    ['node', '    at ZodObject.parse (/app/node_modules/zod/lib/types.js:131:22)', false],
    ['node', '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)', false],
    ['node', '    at Consumer.handle (/app/dist/consumer.js:41:9)', true],
  ]
  it.each(inApp)('%s %j in-app: %s', (language, line, expected) => {
    expect(isInAppFrame(parseFrameLine(line, language)!)).toBe(expected)
  })

  // A path-like prefix matches a directory anywhere in the path, after a slash or a colon, and nowhere else.
  const paths: Array<[string, boolean]> = [
    ['node_modules/zod/lib/types.js', false],
    ['/app/node_modules/zod/lib/types.js', false],
    ['webpack:node_modules/zod/lib/types.js', false],
    ['/app/my_node_modules/x.js', true],
    ['/app/my_node_modules/node_modules/x.js', false],
    ['/app/src/internal/x.js', false],
    ['/app/src/internals/x.js', true],
  ]
  it.each(paths)('file %j in-app: %s', (file, expected) => {
    expect(isInAppFrame({ fn: 'Consumer.handle', file, library: false })).toBe(expected)
  })

  it('takes the first in-app frames up to the limit, and an allow-list or extra deny prefixes over the defaults', () => {
    const frames = ['org.springframework.A.a', 'com.acme.B.b', 'com.acme.C.c', 'java.lang.D.d', 'com.acme.E.e'].map((fn) => ({ fn, file: null, library: false }))
    expect(firstInAppFrames(frames, 2).map((f) => f.fn)).toEqual(['com.acme.B.b', 'com.acme.C.c'])
    expect(firstInAppFrames(frames, 5, { notInAppPrefixes: ['com.acme.C'] }).map((f) => f.fn)).toEqual(['com.acme.B.b', 'com.acme.E.e'])
    expect(firstInAppFrames(frames, 5, { inAppPrefixes: ['java.', 'com.acme.E'] }).map((f) => f.fn)).toEqual(['java.lang.D.d', 'com.acme.E.e'])
  })
})

describe('root exception selection', () => {
  it('takes the last unindented "Caused by:" in Java and ignores suppressed causes', () => {
    const trace = [
      'java.lang.IllegalStateException: outer',
      '\tat com.acme.A.a(A.java:1)',
      '\tSuppressed: java.io.IOException: close failed',
      '\t\tat com.acme.C.close(C.java:3)',
      '\tCaused by: java.lang.Error: inside suppressed',
      'Caused by: com.acme.MiddleException: middle',
      '\tat com.acme.M.m(M.java:2)',
      'Caused by: java.net.SocketTimeoutException: Read timed out',
      '\tat java.net.SocketInputStream.read(SocketInputStream.java:9)',
      '\tat com.acme.Client.get(Client.java:7)',
      '\t... 3 more',
    ].join('\n')
    const analysis = analyseStack(trace)
    expect(analysis.root).toEqual({ type: 'java.net.SocketTimeoutException', message: 'Read timed out' })
    expect(analysis.chain.map((c) => c.type)).toEqual([
      'java.lang.IllegalStateException',
      'com.acme.MiddleException',
      'java.net.SocketTimeoutException',
    ])
    expect(analysis.frames.map((f) => f.fn)).toEqual(['java.net.SocketInputStream.read', 'com.acme.Client.get'])
  })

  it('takes the innermost " ---> " in .NET and its frames only', () => {
    const trace = [
      'System.AggregateException: One or more errors occurred. (Boom)',
      ' ---> System.InvalidOperationException: Wrapper ---> Acme.PaymentDeclinedException: Card declined',
      '   at Acme.Pay.Charge() in /src/Pay.cs:line 9',
      '   --- End of inner exception stack trace ---',
      '   at Acme.Outer.Run() in /src/Outer.cs:line 3',
    ].join('\n')
    const analysis = analyseStack(trace)
    expect(analysis.root).toEqual({ type: 'Acme.PaymentDeclinedException', message: 'Card declined' })
    expect(analysis.frames.map((f) => f.fn)).toEqual(['Acme.Pay.Charge'])
  })

  it('marks a lone wrapper as a missing root', () => {
    const analysis = analyseStack(
      'org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener threw exception\n\tat org.springframework.amqp.X.y(X.java:1)',
    )
    expect(analysis.rootMissing).toBe(true)
  })

  it('follows "raise … from" to the cause in Python, but not "during handling"', () => {
    const block = (type: string, file: string) =>
      `Traceback (most recent call last):\n  File "/app/pkg/${file}.py", line 1, in f\n    x()\n${type}: boom`
    const cause = analyseStack(
      `${block('requests.ConnectionError', 'client')}\n\nThe above exception was the direct cause of the following exception:\n\n${block('billing.PaymentError', 'tasks')}`,
    )
    expect(cause.root?.type).toBe('requests.ConnectionError')
    const context = analyseStack(
      `${block('KeyError', 'a')}\n\nDuring handling of the above exception, another exception occurred:\n\n${block('NameError', 'b')}`,
    )
    expect(context.root?.type).toBe('NameError')
    expect(context.frames.map((f) => f.fn)).toEqual(['pkg.b.f'])
  })

  it('takes the first (innermost) exception of a PHP chain', () => {
    const analysis = analyseStack(
      'App\\Inner: inner msg in /var/www/src/A.php:10\nStack trace:\n#0 /var/www/src/B.php(20): App\\A->run()\n#1 {main}\n\nNext App\\Outer: outer msg in /var/www/src/C.php:5\nStack trace:\n#0 {main}',
    )
    expect(analysis.root).toEqual({ type: 'App\\Inner', message: 'inner msg' })
  })

  it('reads the Node error name and message', () => {
    const analysis = analyseStack('Error [ERR_SOCKET]: connect ECONNREFUSED 10.0.0.5:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)')
    expect(analysis.root).toEqual({ type: 'Error', message: 'connect ECONNREFUSED 10.0.0.5:5432' })
  })

  it('does not take frame-like lines inside a known message for frames', () => {
    const message = 'Validation failed:\n   at line 3 (column 4)\n   at Fake.Frame(Arg a) in /x.cs:line 1'
    const trace = `Acme.ValidationException: ${message}\n   at Acme.Validator.Check() in /src/V.cs:line 5`
    const analysis = analyseStack(trace, { knownMessage: message })
    expect(analysis.root).toEqual({ type: 'Acme.ValidationException', message })
    expect(analysis.frames.map((f) => f.fn)).toEqual(['Acme.Validator.Check'])
  })
})
