import { describe, expect, it } from 'vitest'
import { idSchema, isInt8Id, isoDateSchema, parseIsoDate, text } from '@/lib/shared/schemas/fields'

describe('text()', () => {
  it('takes any valid Unicode, surrogate pairs included', () => {
    for (const value of ['', 'plain', 'Ünïcødé 中文', '🐇💥👩‍👩‍👧', '\uffff', 'tab\tand\r\nnewlines']) expect(text().parse(value)).toBe(value)
  })

  it('refuses NUL characters, which PostgreSQL text and jsonb cannot hold', () => {
    for (const value of ['\u0000', 'a\u0000b', `${'x'.repeat(10_000)}\u0000`]) {
      expect(text().safeParse(value).error?.issues.map((i) => i.message)).toEqual(['must not contain NUL characters (\\u0000)'])
    }
  })

  it('refuses lone surrogates, which jsonb refuses once JSON.stringify has escaped them', () => {
    for (const value of ['\ud800', '\udc00', 'a\ud83d', '\ude00b', '🐇'.slice(0, 1), `${'🐇'.repeat(3)}`.slice(1)]) {
      expect(text().safeParse(value).success, JSON.stringify(value)).toBe(false)
    }
  })

  it('chains like z.string()', () => {
    const reason = text().trim().min(1).max(5)
    expect(reason.parse('  ok  ')).toBe('ok')
    expect(reason.safeParse('   ').success).toBe(false)
    expect(reason.safeParse('\u0000').success).toBe(false)
  })
})

describe('ids', () => {
  it('are positive bigints in plain decimal', () => {
    for (const id of ['1', '42', '9223372036854775807', '1000000000000000000']) expect(isInt8Id(id), id).toBe(true)
    for (const id of ['', '0', '01', '-1', '+1', '1.0', '1e3', ' 1', '0x10', '9223372036854775808', '9999999999999999999', '99999999999999999999', '١٢']) {
      expect(isInt8Id(id), id).toBe(false)
    }
    expect(idSchema.safeParse('9223372036854775808').error?.issues[0].message).toBe('must be a numeric id')
  })
})

describe('ISO 8601 dates', () => {
  it('accepts dates and date-times in years 1 to 9999 (UTC)', () => {
    const cases: [string, string][] = [
      ['2026-11-30', '2026-11-30T00:00:00.000Z'],
      ['2024-02-29', '2024-02-29T00:00:00.000Z'],
      ['2000-02-29T12:00Z', '2000-02-29T12:00:00.000Z'],
      ['2026-11-30T10:00:00.123456+01:00', '2026-11-30T09:00:00.123Z'],
      ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
      ['9999-12-31T23:59:59Z', '9999-12-31T23:59:59.000Z'],
    ]
    for (const [input, iso] of cases) {
      expect(parseIsoDate(input)?.toISOString(), input).toBe(iso)
      expect(isoDateSchema.parse(input).toISOString()).toBe(iso)
    }
  })

  it('refuses what JavaScript rolls over or PostgreSQL refuses', () => {
    for (const input of [
      '2026-02-30', '2026-02-29', '1900-02-29', '2026-04-31', '2026-13-01', '2026-00-10', '2026-11-00',
      '2026-11-30T24:00:00Z', '2026-11-30T10:60:00Z', '2026-11-30T10:00:60Z', '2026-11-30T10:00:00+24:00',
      '0000-01-01', '0001-01-01T00:00:00+01:00', '9999-12-31T23:00:00-05:00', '275760-09-13', '+002026-01-01',
      '1', '2026', '2026-1-1', 'Mon, 30 Nov 2026 10:00:00 GMT', '2026-11-30T10:00:00Zjunk', '',
    ]) {
      expect(parseIsoDate(input), input).toBeNull()
      expect(isoDateSchema.safeParse(input).success, input).toBe(false)
    }
  })
})
