import { gzipSync, deflateRawSync, brotliCompressSync, gunzipSync, inflateRawSync, brotliDecompressSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import type { TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { DEFAULT_REDACTION_RULES } from '@/lib/server/redaction/default-rules'
import { MASKED_BODY, MAX_DECODED_BODY_BYTES } from '@/lib/server/redaction/encoded-body'
import { createRedactor, REDACTED } from '@/lib/server/redaction/redactor'
import { compileUserPattern, PatternCompileError } from '@/lib/server/redaction/user-pattern'

const redactor = createRedactor(DEFAULT_REDACTION_RULES)
const SECRET = 'hunter2-Zq9'

/** Header tables as the drainer stores them: one string header. */
const header = (name: string, value: string): TypedTable => ({ [name]: { t: 'S', v: value } })
const headerText = (table: TypedTable) => JSON.stringify(redactor.typedTable(table))

describe('Basic and Bearer credentials under any header name and in any string', () => {
  const credentials = ['Basic dXNlcjpwYXNz', 'Bearer abcdefghijklmnop', 'Bearer abcdefgh', 'basic YWxhZGRpbjpvcGVuc2VzYW1l']
  const names = ['auth', 'X-Auth', 'x-upstream', 'forwarded-credential-for']
  const cases = names.flatMap((name) => credentials.map((value) => ({ name, value })))

  it.each(cases)('header $name: $value', ({ name, value }) => {
    const out = headerText(header(name, value))
    expect(out).not.toContain(value.split(' ')[1])
    expect(out).toMatch(/REDACTED/)
  })

  it.each(credentials)('as a JSON body value under an ordinary key: %s', (value) => {
    const out = redactor.body(Buffer.from(JSON.stringify({ upstream: value })), 'json').toString()
    expect(out).toBe(JSON.stringify({ upstream: `${value.split(' ')[0]} [REDACTED:token]` }))
  })

  const texts = [
    { name: 'header line in a log', text: 'X-Auth: Bearer abcdefgh', gone: 'abcdefgh' },
    { name: 'long credential in prose', text: 'retrying with Bearer abcdefghijklmnop after 401', gone: 'abcdefghijklmnop' },
    { name: 'Basic credential in prose', text: 'upstream refused Basic dXNlcjpwYXNz (401)', gone: 'dXNlcjpwYXNz' },
    { name: 'quoted header in JSON-ish text', text: `headers {"x-auth": "Bearer abcdefgh"}`, gone: 'abcdefgh' },
  ]
  it.each(texts)('text: $name', ({ text, gone }) => {
    const out = redactor.text(text)
    expect(out).not.toContain(gone)
    expect(out).toContain('[REDACTED:token]')
  })

  const kept = [
    'Basic authentication failed for user bob',
    'Bearer authentication is required for this endpoint',
    'Token validation failed: expired',
    'the basic configuration was loaded',
  ]
  it.each(kept)('leaves prose alone: %s', (text) => expect(redactor.text(text)).toBe(text))
})

describe('secret keys', () => {
  const keys = ['passphrase', 'keyPassphrase', 'pin', 'PIN', 'pin_code', 'session', 'sessionId', 'x-session-id', 'JSESSIONID', 'privKey', 'priv_key', 'apiKey', 'pass', 'pw', 'pwd', 'passcode']
  it.each(keys)('JSON key %s', (key) => {
    const out = redactor.body(Buffer.from(JSON.stringify({ [key]: SECRET, keep: 'plain' })), 'json').toString()
    expect(out).toBe(JSON.stringify({ [key]: REDACTED, keep: 'plain' }))
  })

  it.each(keys)('header %s', (key) => {
    expect(redactor.typedTable(header(key, SECRET))).toEqual({ [key]: { t: 'S', v: REDACTED } })
  })

  it.each(['pass', 'pw', 'pwd', 'PW', 'passphrase', 'sessionId'])('%s=… pairs in text', (key) => {
    expect(redactor.text(`host=db&user=app&${key}=${SECRET}&port=5432`)).toBe(`host=db&user=app&${key}=${REDACTED}&port=5432`)
    // A value runs to the end of the line (values may hold spaces): the secret is gone either way.
    expect(redactor.text(`connect host=db ${key}=${SECRET}`)).toBe(`connect host=db ${key}=${REDACTED}`)
  })

  it('a plain `key` holding a known secret format', () => {
    const out = redactor.body(Buffer.from('{"key":"sk_live_4eC39HqLyjWDarjtT1zdp7dc","other":{"key":"order-42"}}'), 'json').toString()
    expect(out).toBe('{"key":"[REDACTED:token]","other":{"key":"order-42"}}')
  })

  it('does not take exception names and stack frames for keys', () => {
    const stack = 'com.acme.SessionExpiredException: session expired\n\tat com.acme.SessionManager.check(SessionManager.java:42)'
    expect(redactor.text(stack)).toBe(stack)
  })
})

describe('token formats anywhere', () => {
  const tokens = [
    { name: 'Stripe secret key', token: 'sk_live_4eC39HqLyjWDarjtT1zdp7dc' },
    { name: 'Stripe restricted key', token: 'rk_live_51H8abcDEFghiJKLmnoPQRst' },
    { name: 'Stripe test key', token: 'sk_test_4eC39HqLyjWDarjtT1zdp7dc' },
    { name: 'Slack bot token', token: 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx' },
    { name: 'Slack user token', token: 'xoxp-123456789012-123456789012-123456789012-abcdef0123456789' },
    { name: 'AWS access key id', token: 'AKIAIOSFODNN7EXAMPLE' },
    { name: 'AWS temporary access key id', token: 'ASIAY34FZKBOKMUTVV7A' },
    { name: 'GitHub token', token: 'ghp_16C7e42F292c6912E7710c838347Ae178B4a' },
  ]
  it.each(tokens)('$name in text, JSON and a header', ({ token }) => {
    expect(redactor.text(`calling billing with ${token}, got 401`)).toBe('calling billing with [REDACTED:token], got 401')
    expect(redactor.body(Buffer.from(JSON.stringify({ k: token })), 'json').toString()).toBe('{"k":"[REDACTED:token]"}')
    expect(headerText(header('x-whatever', token))).not.toContain(token)
  })

  it('Slack webhook URLs keep their host, lose their secret path', () => {
    const url = 'https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX'
    expect(redactor.text(`posting to ${url} failed`)).toBe('posting to https://hooks.slack.com/services/[REDACTED:token] failed')
  })

  it('binary content is masked in place, same length', () => {
    const body = Buffer.concat([Buffer.from([0, 1, 2]), Buffer.from('AKIAIOSFODNN7EXAMPLE'), Buffer.from([255])])
    const out = redactor.body(body, 'binary')
    expect(out.length).toBe(body.length)
    expect(out.toString('latin1')).not.toContain('AKIAIOSFODNN7EXAMPLE')
  })

  it.each(['AKIA is the prefix of AWS keys', 'ask_live_event', 'xoxb-short', 'AKIAIOSFODNN7EXAMPLEXX'])('leaves look-alikes alone: %s', (text) => {
    expect(redactor.text(text)).toBe(text)
  })
})

describe('e-mail addresses', () => {
  it.each([
    { text: 'to=alice%40example.com&x=1', gone: 'alice%40example.com' },
    { text: 'https://api.example.com/users/alice%40example.com/orders', gone: 'alice%40example.com' },
    { text: 'alice.smith+tag%40mail.example.co.uk', gone: 'alice.smith+tag%40mail.example.co.uk' },
  ])('URL-encoded: $text', ({ text, gone }) => {
    const out = redactor.text(text)
    expect(out).not.toContain(gone)
    expect(out).toContain('[REDACTED:email]')
  })

  it('a percent sign inside the local part is still part of the address', () => {
    expect(redactor.text('mail a%b@example.com now')).toBe('mail [REDACTED:email] now')
  })

  it.each(['50%40 off', 'progress 100%40'])('leaves percentages alone: %s', (text) => expect(redactor.text(text)).toBe(text))
})

describe('card numbers', () => {
  const cards = [
    { name: 'dots', text: 'card 4111.1111.1111.1111 declined', gone: '4111.1111.1111.1111' },
    { name: 'double spaces', text: 'card 4111  1111  1111  1111 declined', gone: '4111  1111  1111  1111' },
    { name: 'glued after a dash', text: 'order-4111111111111111', gone: '4111111111111111' },
    { name: 'glued to letters, spaced', text: 'x4111 1111 1111 1111y', gone: '4111 1111 1111 1111' },
    { name: 'glued to letters, plain', text: 'pan4111111111111111end', gone: '4111111111111111' },
    { name: 'Amex with dots', text: 'amex 3782.822463.10005', gone: '3782.822463.10005' },
  ]
  it.each(cards)('$name', ({ text, gone }) => {
    const out = redactor.text(text)
    expect(out).not.toContain(gone)
    expect(out).toContain('[REDACTED:card]')
  })

  const kept = [
    'order-4111111111111112 failed',
    'ref 4111.1111.1111.1112',
    'x4111 1111 1111 1112y',
    'at 1764547200000 the job failed',
    'ts-1764547200000',
    'ratio 0.4111111111111111',
    'id 14111111111111111',
  ]
  it.each(kept)('leaves alone: %s', (text) => expect(redactor.text(text)).toBe(text))
})

describe('base64-encoded JSON', () => {
  const secretJson = JSON.stringify({ user: 'bob', password: SECRET })
  const b64 = Buffer.from(secretJson).toString('base64')
  const decode = (text: string, encoding: BufferEncoding = 'base64') => JSON.parse(Buffer.from(text, encoding).toString('utf8'))

  it('a JSON string value is decoded, redacted and encoded again', () => {
    const out = JSON.parse(redactor.body(Buffer.from(JSON.stringify({ payload: b64 })), 'json').toString())
    expect(decode(out.payload)).toEqual({ user: 'bob', password: REDACTED })
  })

  it('a header', () => {
    const out = redactor.typedTable(header('x-payload', b64))
    expect(decode((out['x-payload'] as { v: string }).v)).toEqual({ user: 'bob', password: REDACTED })
  })

  it('a whole text body, trailing newline kept', () => {
    const out = redactor.body(Buffer.from(`${b64}\n`), 'text').toString()
    expect(out.endsWith('\n')).toBe(true)
    expect(decode(out.trim())).toEqual({ user: 'bob', password: REDACTED })
  })

  it('base64url without padding stays base64url without padding', () => {
    const url = Buffer.from(JSON.stringify({ token: SECRET, n: '??>>' })).toString('base64url')
    const out = redactor.text(url)
    expect(out).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(decode(out, 'base64url')).toEqual({ token: REDACTED, n: '??>>' })
  })

  it('nested: base64 of JSON holding base64 of JSON', () => {
    const inner = Buffer.from(JSON.stringify({ secret: SECRET })).toString('base64')
    const outer = Buffer.from(JSON.stringify({ envelope: inner })).toString('base64')
    const out = decode(redactor.text(outer))
    expect(decode(out.envelope)).toEqual({ secret: REDACTED })
  })

  it('in binary header bytes, masked whole at the same length', () => {
    const bytes = Buffer.from(b64, 'latin1')
    const out = redactor.typedTable({ 'x-raw': { t: 'x', b64: bytes.toString('base64') } })
    const masked = Buffer.from((out['x-raw'] as { b64: string }).b64, 'base64')
    expect(masked.length).toBe(bytes.length)
    expect(masked.toString('latin1')).toBe('*'.repeat(bytes.length))
  })

  it('base64 of JSON without secrets, and base64 of other things, stay as they are', () => {
    const clean = Buffer.from(JSON.stringify({ user: 'bob' })).toString('base64')
    expect(redactor.text(clean)).toBe(clean)
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]).toString('base64')
    expect(redactor.text(png)).toBe(png)
    expect(redactor.text('eventHandlerRegistry')).toBe('eventHandlerRegistry')
  })
})

describe('bodies with a content encoding', () => {
  const secretBody = JSON.stringify({ order: 42, password: SECRET, customer: 'jane@example.com' })
  const redactedBody = JSON.stringify({ order: 42, password: REDACTED, customer: '[REDACTED:email]' })

  it.each([
    { encoding: 'gzip', encode: gzipSync, decode: gunzipSync },
    { encoding: 'x-gzip', encode: gzipSync, decode: gunzipSync },
    { encoding: 'gzip:UTF-8', encode: gzipSync, decode: gunzipSync },
    { encoding: 'deflate', encode: deflateRawSync, decode: inflateRawSync },
    { encoding: 'br', encode: brotliCompressSync, decode: brotliDecompressSync },
  ])('$encoding: decoded, redacted, encoded again', ({ encoding, encode, decode }) => {
    const out = redactor.encodedBody(encode(Buffer.from(secretBody)), encoding)!
    expect(out).toMatchObject({ redacted: true, masked: null, text: null })
    expect(decode(out.bytes).toString()).toBe(redactedBody)
  })

  it('base64: decoded, redacted, encoded again (line breaks allowed)', () => {
    const stored = Buffer.from(Buffer.from(secretBody).toString('base64').replace(/(.{20})/g, '$1\r\n'))
    const out = redactor.encodedBody(stored, 'base64')!
    expect(out.redacted).toBe(true)
    expect(out.text).toBe(Buffer.from(redactedBody).toString('base64'))
    expect(Buffer.from(out.text!, 'base64').toString()).toBe(redactedBody)
  })

  it('gzip then base64, as a list', () => {
    const stored = Buffer.from(gzipSync(Buffer.from(`user=bob password=${SECRET}`)).toString('base64'))
    const out = redactor.encodedBody(stored, 'gzip, base64')!
    expect(gunzipSync(Buffer.from(out.text!, 'base64')).toString()).toBe(`user=bob password=${REDACTED}`)
  })

  it('nothing to redact: the stored bytes themselves', () => {
    const stored = gzipSync(Buffer.from('{"order":42}'))
    const out = redactor.encodedBody(stored, 'gzip')!
    expect(out.bytes).toBe(stored)
    expect(out.redacted).toBe(false)
  })

  it('binary content inside gzip is masked in place', () => {
    const inner = Buffer.concat([Buffer.from([0, 1, 2, 255]), Buffer.from('jane@example.com'), Buffer.from([0])])
    const out = redactor.encodedBody(gzipSync(inner), 'gzip')!
    const decoded = gunzipSync(out.bytes)
    expect(decoded.length).toBe(inner.length)
    expect(decoded.toString('latin1')).not.toContain('jane@example.com')
  })

  it('a gzip bomb is stopped at the cap and the body masked whole, flagged', () => {
    // 80 MiB of zeros compress to about 80 KiB: decoding must stop at 64 MiB, not inflate all of it.
    const bomb = gzipSync(Buffer.alloc(MAX_DECODED_BODY_BYTES + 16 * 1024 * 1024), { level: 9 })
    const out = redactor.encodedBody(bomb, 'gzip')!
    expect(out).toEqual({ bytes: Buffer.from(MASKED_BODY), text: MASKED_BODY, redacted: true, masked: expect.stringMatching(/more than 64 MiB/) })
  })

  it('a body that does not decode is masked whole, flagged', () => {
    const truncated = gzipSync(Buffer.from(secretBody)).subarray(0, 20)
    expect(redactor.encodedBody(truncated, 'gzip')).toMatchObject({ text: MASKED_BODY, redacted: true, masked: expect.stringMatching(/cannot be decoded as gzip/) })
    expect(redactor.encodedBody(Buffer.from('not base64!'), 'base64')).toMatchObject({ masked: expect.stringMatching(/cannot be decoded/) })
  })

  it.each(['utf-8', 'identity', 'zstd', '', undefined, 42])('is not handled for %s (the caller redacts the bytes as they are)', (encoding) => {
    expect(redactor.encodedBody(Buffer.from(secretBody), encoding)).toBeNull()
  })
})

describe('headers nested too deep to decode', () => {
  it('are kept as raw bytes by the drainer, and masked in place here: same length, no secret', () => {
    const raw = Buffer.concat([Buffer.from([0, 0, 0, 40, 1, 'F'.charCodeAt(0)]), Buffer.from(`password=${SECRET} jane@example.com`)])
    const table = { 'x-deep': { t: 'F', b64: raw.toString('base64'), tooDeep: true } } as unknown as TypedTable
    const out = redactor.typedTable(table)['x-deep'] as unknown as { t: string; b64: string; tooDeep: boolean }
    const bytes = Buffer.from(out.b64, 'base64')
    expect(out).toMatchObject({ t: 'F', tooDeep: true })
    expect(bytes.length).toBe(raw.length)
    expect(bytes.subarray(0, 6)).toEqual(raw.subarray(0, 6))
    expect(bytes.toString('latin1')).not.toContain(SECRET)
    expect(bytes.toString('latin1')).not.toContain('jane@example.com')
  })
})

describe('custom patterns on RE2', () => {
  it('(a|a)*b and (q|q)*z over long inputs are answered at once', () => {
    const custom = createRedactor([
      { kind: 'pattern', value: '(a|a)*b', enabled: true },
      { kind: 'pattern', value: '(q|q)*z', enabled: true },
    ])
    const long = 'a'.repeat(50_000) + 'q'.repeat(50_000)
    expect(custom.text(long)).toBe(long)
    expect(custom.text(`${'a'.repeat(5_000)}b and qqqz`)).toBe(`${REDACTED} and ${REDACTED}`)
  })

  it('match case-insensitively, JavaScript spellings included', () => {
    const custom = createRedactor([
      { kind: 'pattern', value: 'ord-\\d{6}', enabled: true },
      { kind: 'pattern', value: '(?<ref>\\u0052EF)-[0-9]+', enabled: true },
    ])
    expect(custom.text('ORD-123456 and ord-654321, ref-77')).toBe(`${REDACTED} and ${REDACTED}, ${REDACTED}`)
  })

  it('mask binary content at the same length', () => {
    const custom = createRedactor([{ kind: 'pattern', value: 'ord-\\d{6}', enabled: true }])
    const body = Buffer.concat([Buffer.from([0, 255]), Buffer.from('ord-123456'), Buffer.from([1])])
    const out = custom.body(body, 'binary')
    expect(out.toString('latin1')).toBe(`\u0000\u00ff${'*'.repeat(10)}\u0001`)
  })

  it.each([
    { pattern: '(a)\\1', reason: /backreferences/ },
    { pattern: '(?<n>a)\\k<n>', reason: /backreferences/ },
    { pattern: 'foo(?=bar)', reason: /lookaround/ },
    { pattern: '(?<!x)y', reason: /lookaround/ },
    { pattern: '(unclosed', reason: /not a valid regular expression/ },
  ])('refuse what RE2 cannot run: $pattern', ({ pattern, reason }) => {
    expect(() => compileUserPattern(pattern)).toThrow(reason)
    // A rule set holding it is not compiled with the rule left out.
    expect(() => createRedactor([{ kind: 'pattern', value: pattern, enabled: true }])).toThrow(PatternCompileError)
  })

  it('escaped backslashes and parentheses are not taken for backreferences or lookaround', () => {
    const custom = createRedactor([
      { kind: 'pattern', value: 'dir\\\\1', enabled: true },
      { kind: 'pattern', value: 'x\\(?=y', enabled: true },
    ])
    expect(custom.text('C:\\dir\\1 and x(=y and x=y')).toBe(`C:\\${REDACTED} and ${REDACTED} and ${REDACTED}`)
  })

  it('a disabled pattern that does not compile is not run, and does not stop the others', () => {
    const custom = createRedactor([
      { kind: 'pattern', value: '(a)\\1', enabled: false },
      { kind: 'key', value: 'password', enabled: true },
    ])
    expect(custom.text('password=x')).toBe(`password=${REDACTED}`)
  })
})
