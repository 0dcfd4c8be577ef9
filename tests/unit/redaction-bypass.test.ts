import { describe, expect, it } from 'vitest'
import type { TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { DEFAULT_REDACTION_RULES } from '@/lib/server/redaction/default-rules'
import { createRedactor, REDACTED } from '@/lib/server/redaction/redactor'

const redactor = createRedactor(DEFAULT_REDACTION_RULES)
const SECRET = 'hunter2-Zq9'

/** Every case hides SECRET somewhere a naive redactor would miss; after redaction it must be gone. */
const JSON_BODIES: { name: string; body: string }[] = [
  { name: 'top-level key', body: `{"password":"${SECRET}"}` },
  { name: 'nested objects', body: `{"user":{"profile":{"credentials":{"pin":"${SECRET}"}}}}` },
  { name: 'secret key deep inside', body: `{"a":{"b":{"c":{"d":{"e":{"Password":"${SECRET}"}}}}}}` },
  { name: 'inside arrays', body: `{"users":[{"name":"a"},{"name":"b","PASSWORD":"${SECRET}"}]}` },
  { name: 'top-level array', body: `[1,{"secret":"${SECRET}"}]` },
  { name: 'arrays of arrays', body: `[[[{"token":"${SECRET}"}]]]` },
  { name: 'UPPER CASE key', body: `{"PASSWORD":"${SECRET}"}` },
  { name: 'MiXeD case key', body: `{"PassWord":"${SECRET}"}` },
  { name: 'snake_case key', body: `{"pass_word":"${SECRET}"}` },
  { name: 'kebab-case key', body: `{"X-Api-Key":"${SECRET}"}` },
  { name: 'camelCase key', body: `{"apiKey":"${SECRET}"}` },
  { name: 'dotted key', body: `{"client.secret":"${SECRET}"}` },
  { name: 'unicode-escaped key', body: `{"pa\\u0073sword":"${SECRET}"}` },
  { name: 'whitespace around the colon', body: `{ "password" :\n  "${SECRET}" }` },
  { name: 'secret key holding an object', body: `{"token":{"value":"${SECRET}","type":"x"}}` },
  { name: 'secret key holding an array', body: `{"cookies":["a=1","b=${SECRET}"]}` },
  { name: 'duplicate keys (both)', body: `{"password":"first","password":"${SECRET}"}` },
  { name: 'JSON inside a string', body: JSON.stringify({ payload: JSON.stringify({ password: SECRET }) }) },
  { name: 'JSON inside JSON inside a string', body: JSON.stringify({ outer: JSON.stringify({ inner: JSON.stringify({ Secret: SECRET }) }) }) },
  { name: 'key=value inside a string', body: JSON.stringify({ dsn: `host=db user=app password=${SECRET}` }) },
  { name: 'URL password inside a string', body: JSON.stringify({ url: `amqp://app:${SECRET}@rabbit:5672/vhost` }) },
  { name: 'truncated JSON (text rules)', body: `{"order":1,"password": "${SECRET}", "lines": [` },
  { name: 'nesting past the scanner limit', body: `${'['.repeat(600)}{"password":"${SECRET}"}${']'.repeat(600)}` },
]

const TEXTS: { name: string; text: string }[] = [
  { name: 'query string', text: `user=bob&password=${SECRET}&x=1` },
  { name: 'colon, upper case', text: `PASSWORD: ${SECRET}` },
  { name: 'after a harmless pair', text: `user=bob password=${SECRET}` },
  { name: 'quoted JSON-ish in a log line', text: `login failed {"user": "bob", "Token" : "${SECRET}"} at 10:00` },
  { name: 'single quotes', text: `config: {'client_secret': '${SECRET}'}` },
  { name: 'XML element', text: `<login><user>bob</user><ns:Password>${SECRET}</ns:Password></login>` },
  { name: 'XML attribute', text: `<login user="bob" password="${SECRET}"/>` },
  { name: 'HTTP header line', text: `Authorization: Basic ${Buffer.from(`bob:${SECRET}`).toString('base64')}` },
  { name: 'bearer token anywhere', text: `calling upstream with Bearer ${SECRET}.abc` },
  { name: 'URL credentials', text: `connect ECONNREFUSED postgres://app:${SECRET}@db:5432/orders` },
  { name: 'cookie header', text: `Cookie: session=${SECRET}; theme=dark` },
]

const PATTERN_CASES: { name: string; input: string; gone: string; kept?: string }[] = [
  { name: 'e-mail address', input: 'customer jane.doe+test@mail.example.co.uk complained', gone: 'jane.doe+test@mail.example.co.uk', kept: 'complained' },
  { name: 'card number, spaced', input: 'card 4111 1111 1111 1111 declined', gone: '4111 1111 1111 1111', kept: 'declined' },
  { name: 'card number, dashed', input: 'card 5500-0000-0000-0004', gone: '5500-0000-0000-0004' },
  { name: 'card number, plain', input: 'pan=378282246310005', gone: '378282246310005' },
  { name: 'JWT', input: 'token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok', gone: 'eyJzdWIiOiIxMjM0NTY3ODkwIn0', kept: ' ok' },
  { name: 'private key', input: '-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----', gone: 'MIIEpAIBAAKCAQEA' },
]

const KEPT: { name: string; text: string }[] = [
  { name: 'a number failing Luhn', text: 'order 4111111111111112 failed' },
  { name: 'an epoch-millisecond timestamp', text: 'at 1764547200000 the job failed' },
  { name: 'a Java stack trace naming tokens', text: 'com.acme.TokenExpiredException: token expired\n\tat com.acme.TokenService.check(TokenService.java:42)' },
  { name: 'an exception named after a password', text: 'InvalidPasswordException: password must have 12 characters' },
  { name: 'prose about authentication', text: 'Basic authentication failed for user bob' },
]

describe('redaction cannot be bypassed', () => {
  it.each(JSON_BODIES)('JSON body: $name', ({ body }) => {
    const out = redactor.body(Buffer.from(body), 'json').toString('utf8')
    expect(out).not.toContain(SECRET)
    expect(out).toContain('REDACTED')
  })

  it.each(JSON_BODIES)('JSON as a text body, a header string and an error message: $name', ({ body }) => {
    expect(redactor.body(Buffer.from(body), 'text').toString('utf8')).not.toContain(SECRET)
    expect(redactor.text(body)).not.toContain(SECRET)
    const headers = redactor.typedTable({ 'x-payload': { t: 'S', v: body } })
    expect(JSON.stringify(headers)).not.toContain(SECRET)
  })

  it.each(TEXTS)('text: $name', ({ text }) => {
    const out = redactor.text(text)
    expect(out).not.toContain(SECRET)
    expect(out).not.toContain(Buffer.from(`bob:${SECRET}`).toString('base64'))
  })

  it.each(PATTERN_CASES)('value pattern: $name', ({ input, gone, kept }) => {
    const out = redactor.text(input)
    expect(out).not.toContain(gone)
    expect(out).toMatch(/\[REDACTED:[a-z-]+\]/)
    if (kept) expect(out).toContain(kept)
  })

  it.each(KEPT)('leaves alone $name', ({ text }) => {
    expect(redactor.text(text)).toBe(text)
  })

  it('JSON numbers that are card numbers, but not other long numbers', () => {
    const out = redactor.body(Buffer.from('{"n":4111111111111111,"ts":1764547200000,"id":4111111111111112}'), 'json').toString()
    expect(out).toBe('{"n":"[REDACTED:card]","ts":1764547200000,"id":4111111111111112}')
  })

  it('secret keys holding numbers, booleans and null', () => {
    const out = redactor.body(Buffer.from('{"cvv":737,"pwd":true,"token":null,"n":1}'), 'json').toString()
    expect(out).toBe(`{"cvv":"${REDACTED}","pwd":"${REDACTED}","token":"${REDACTED}","n":1}`)
  })

  it('keys that are e-mail addresses', () => {
    const out = redactor.body(Buffer.from('{"byUser":{"jane@example.com":3}}'), 'json').toString()
    expect(out).toBe('{"byUser":{"[REDACTED:email]":3}}')
  })
})

describe('typed headers', () => {
  const headers: TypedTable = {
    AUTHORIZATION: { t: 'S', v: `Bearer ${SECRET}` },
    'x-context': { t: 'F', v: { tenant: { t: 'S', v: 'acme' }, 'Api-Key': { t: 'S', v: SECRET }, deeper: { t: 'F', v: { PassWord: { t: 'S', v: SECRET } } } } },
    'x-list': { t: 'A', v: [{ t: 'S', v: 'a' }, { t: 'F', v: { client_secret: { t: 'S', v: SECRET } } }, { t: 'A', v: [{ t: 'S', v: `mail jane@example.com` }] }] },
    'x-card': { t: 'l', v: '4111111111111111' },
    'x-bytes': { t: 'x', b64: Buffer.from(`\u0000\u0001 4111 1111 1111 1111 \u00ff`, 'latin1').toString('base64') },
    'x-latin1': { t: 'S', b64: Buffer.from(`caf\u00e9 jane@example.com`, 'latin1').toString('base64') },
    'x-retries': { t: 'I', v: 3 },
    'x-death': { t: 'A', v: [{ t: 'F', v: { queue: { t: 'S', v: 'orders' }, count: { t: 'l', v: '2' } } }] },
  }

  it('are redacted at any depth, in tables, arrays and bytes, in any letter case', () => {
    const out = redactor.typedTable(headers)
    const text = JSON.stringify(out)
    expect(text).not.toContain(SECRET)
    expect(text).not.toContain('jane@example.com')
    expect(out.AUTHORIZATION).toEqual({ t: 'S', v: REDACTED })
    expect(out['x-card']).toEqual({ t: 'S', v: '[REDACTED:card]' })
    // Bytes keep their length: a binary header masked in place, never shifted.
    const bytes = Buffer.from((out['x-bytes'] as { b64: string }).b64, 'base64')
    expect(bytes.length).toBe(Buffer.from((headers['x-bytes'] as { b64: string }).b64, 'base64').length)
    expect(bytes.toString('latin1')).toContain('*******************')
    expect(Buffer.from((out['x-latin1'] as { b64: string }).b64, 'base64').toString('latin1')).toBe('caf\u00e9 ****************')
    // What holds no secret is the very same object.
    expect(out['x-retries']).toBe(headers['x-retries'])
    expect(out['x-death']).toBe(headers['x-death'])
    expect((out['x-context'] as { v: TypedTable }).v.tenant).toBe((headers['x-context'] as { v: TypedTable }).v.tenant)
  })

  it('without a secret come back as the same table', () => {
    const clean: TypedTable = { 'x-retries': { t: 'I', v: 3 }, 'x-nested': { t: 'F', v: { a: { t: 'S', v: 'plain' } } } }
    expect(redactor.typedTable(clean)).toBe(clean)
  })
})

describe('bodies', () => {
  it('binary bodies are masked in place, same length', () => {
    const body = Buffer.concat([Buffer.from([0x0a, 0x10, 0xff]), Buffer.from('jane@example.com'), Buffer.from([0x00, 0x12])])
    const out = redactor.body(body, 'binary')
    expect(out.length).toBe(body.length)
    expect(out.subarray(0, 3)).toEqual(body.subarray(0, 3))
    expect(out.subarray(-2)).toEqual(body.subarray(-2))
    expect(out.toString('latin1')).not.toContain('jane@example.com')
  })

  it('JSON without secrets stays byte for byte, formatting, big numbers and duplicates included', () => {
    const text = '{ "id" : 12345678901234567890123, "a":1,"a":2, "s":"caf\\u00e9 \\"q\\"", "n":[1.5e10, -0, true, null] }\n'
    const body = Buffer.from(text)
    expect(redactor.body(body, 'json')).toBe(body)
  })

  it('JSON with a secret changes only that value', () => {
    const out = redactor.body(Buffer.from('{ "id" : 12345678901234567890123,\n  "password": "x",\n  "n": 1 }'), 'json').toString()
    expect(out).toBe(`{ "id" : 12345678901234567890123,\n  "password": "${REDACTED}",\n  "n": 1 }`)
  })

  it('properties (parsed JSON) are redacted by key and value', () => {
    const properties = { correlationId: 'jane@example.com', appId: 'orders', headers: { Cookie: 'a=b' } }
    expect(redactor.json(properties)).toEqual({ correlationId: '[REDACTED:email]', appId: 'orders', headers: { Cookie: REDACTED } })
    const clean = { appId: 'orders' }
    expect(redactor.json(clean)).toBe(clean)
  })
})

describe('rule sets', () => {
  it('disabled rules redact nothing', () => {
    const off = createRedactor(DEFAULT_REDACTION_RULES.map((r) => ({ ...r, enabled: false })))
    expect(off.active).toBe(false)
    expect(off.text(`password=${SECRET} jane@example.com`)).toBe(`password=${SECRET} jane@example.com`)
  })

  it('custom patterns replace every match, case-insensitively', () => {
    const custom = createRedactor([{ kind: 'pattern', value: 'ord-\\d{6}', enabled: true }])
    expect(custom.text('orders ORD-123456 and ord-654321')).toBe(`orders ${REDACTED} and ${REDACTED}`)
  })

  it('custom key globs', () => {
    const custom = createRedactor([{ kind: 'key', value: 'iban*', enabled: true }])
    expect(custom.body(Buffer.from('{"IBAN_number":"DE89 3704","iban":"x","myIban":"kept"}'), 'json').toString()).toBe(
      `{"IBAN_number":"${REDACTED}","iban":"${REDACTED}","myIban":"kept"}`,
    )
  })
})


describe('stored tables of unexpected shape', () => {
  it('are walked as plain JSON: still redacted, never a crash', () => {
    const odd = {
      'x-null': { t: 'S', v: null },
      'x-plain': `mail ${'jane@example.com'}`,
      'x-array-not-array': { t: 'A', v: 'jane@example.com' },
      'x-table-as-array': { t: 'F', v: [{ Password: SECRET }] },
      'x-untagged': { nested: { token: SECRET } },
      'x-unknown-tag': { t: 'Z', v: `password=${SECRET}` },
    } as unknown as TypedTable
    const out = JSON.stringify(redactor.typedTable(odd))
    expect(out).not.toContain(SECRET)
    expect(out).not.toContain('jane@example.com')
    expect(JSON.parse(out)['x-null']).toEqual({ t: 'S', v: null })
  })
})
