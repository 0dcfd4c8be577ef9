import { describe, expect, it } from 'vitest'
import { parse } from 'csv-parse/sync'
import { CSV_BOM, CSV_COLUMNS, csvCell, csvHeader, csvLine, MAX_CELL_CHARS, toCsvLine } from '@/lib/server/export/csv'
import type { ExportRow } from '@/lib/server/export/export-rows'
import { DEFAULT_REDACTION_RULES } from '@/lib/server/redaction/default-rules'
import { createRedactor } from '@/lib/server/redaction/redactor'

describe('CSV cells (RFC 4180)', () => {
  const cases: { name: string; value: string | number | boolean | null; cell: string }[] = [
    { name: 'plain text', value: 'orders.dlq', cell: 'orders.dlq' },
    { name: 'null', value: null, cell: '' },
    { name: 'number', value: 42, cell: '42' },
    { name: 'comma', value: 'a,b', cell: '"a,b"' },
    { name: 'quote', value: 'say "hi"', cell: '"say ""hi"""' },
    { name: 'LF', value: 'one\ntwo', cell: '"one\ntwo"' },
    { name: 'CRLF', value: 'one\r\ntwo', cell: '"one\r\ntwo"' },
    { name: 'edge spaces', value: ' padded ', cell: '" padded "' },
    { name: 'formula =', value: '=SUM(A1:A9)', cell: "'=SUM(A1:A9)" },
    { name: 'formula +', value: '+1-2', cell: "'+1-2" },
    { name: 'formula -', value: '-1+2', cell: "'-1+2" },
    { name: 'formula @', value: '@cmd', cell: "'@cmd" },
    { name: 'formula behind a tab', value: '\t=1', cell: "'\t=1" },
    { name: 'formula with a comma', value: '=HYPERLINK("x","y")', cell: `"'=HYPERLINK(""x"",""y"")"` },
    { name: 'numbers are not text', value: -5, cell: '-5' },
    { name: 'formula behind a space', value: ' =1+1', cell: "' =1+1" },
    { name: 'formula behind spaces and tabs', value: ' \t +1', cell: "' \t +1" },
    { name: 'formula behind a newline', value: '\n=1+1', cell: `"'\n=1+1"` },
    { name: 'formula behind CR LF', value: '\r\n@SUM(A1)', cell: `"'\r\n@SUM(A1)"` },
    { name: 'formula behind a no-break space', value: '\u00a0=1+1', cell: "'\u00a0=1+1" },
    { name: 'formula behind a zero-width space', value: '\u200b-1+2', cell: "'\u200b-1+2" },
    { name: 'formula behind an ideographic space', value: '\u3000=1', cell: "'\u3000=1" },
    { name: 'full-width =', value: '\uff1dSUM(A1:A9)', cell: "'\uff1dSUM(A1:A9)" },
    { name: 'full-width +', value: '\uff0b1', cell: "'\uff0b1" },
    { name: 'full-width -', value: '\uff0d1', cell: "'\uff0d1" },
    { name: 'full-width @', value: '\uff20cmd', cell: "'\uff20cmd" },
    { name: 'small =', value: '\ufe66cmd', cell: "'\ufe66cmd" },
    { name: 'semicolon', value: 'a;b', cell: '"a;b"' },
    { name: 'semicolon before a formula', value: ';=1+1', cell: '";=1+1"' },
    { name: 'semicolon, quote and formula', value: '=A1;"x"', cell: `"'=A1;""x"""` },
    { name: 'white space alone is no formula', value: '  ', cell: '"  "' },
    { name: 'a formula character later on is plain text', value: 'a=1', cell: 'a=1' },
  ]
  it.each(cases)('$name', ({ value, cell }) => expect(csvCell(value)).toBe(cell))

  it('neutralised cells parse back to their text behind the leading quote, whole in a semicolon dialect too', () => {
    const cells = [' =1+1', '\n=1', '\u00a0@x', '\uff1d1', ';=1+1', 'a;b']
    const line = csvLine(cells)
    expect((parse(line) as string[][])[0]).toEqual(["' =1+1", "'\n=1", "'\u00a0@x", "'\uff1d1", ';=1+1', 'a;b'])
    // A spreadsheet that splits on semicolons still sees each of these whole: their semicolons are inside quotes.
    for (const cell of [';=1+1', 'a;b', 'x;@y']) expect(parse(csvLine([cell]), { delimiter: ';' })).toEqual([[cell]])
  })

  it('a header and hostile rows parse back to the same cells', () => {
    const rows = [
      ['a', 'b,c', 'd "e"', 'line\none', 'line\r\ntwo', '', 'ünïcödé 🐇'],
      ['=1+1', '@x', '', ',', '"', '""', '\n'],
    ]
    const text = CSV_BOM + csvLine(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'h7']) + rows.map(csvLine).join('')
    const parsed = parse(text, { bom: true }) as string[][]
    expect(parsed[0]).toEqual(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'h7'])
    expect(parsed[1]).toEqual(rows[0])
    expect(parsed[2]).toEqual(["'=1+1", "'@x", '', ',', '"', '""', '\n'])
    expect(text.endsWith('\r\n')).toBe(true)
  })
})

describe('CSV rows', () => {
  const row = (overrides: Partial<ExportRow> = {}): ExportRow => ({
    id: '7', source_id: '1', source_vhost: '/', source_queue: 'orders.dlq', status: 'dead', status_reason: null, status_changed_at: null,
    status_changed_by: null, seen_count: 1, fingerprint: 'ab', body: null, body_text: '{"a":1}', body_size: 7, body_encoding: 'json',
    properties_json: '{"contentType":"application/json","messageId":"m-1","correlationId":"c-1"}', headers_json: '{"x-retries":{"t":"I","v":3}}',
    delivery_exchange: '', delivery_routing_key: 'orders', redelivered: false, death_reason: 'rejected', attempts: 2,
    origin_exchange: 'orders', origin_routing_keys: ['a', 'b'], origin_queue: 'orders.q', first_death_at: null, last_death_at: null,
    failed_at: '2026-12-01T00:00:00.000000Z', error_type: 'E', error_message: 'boom', error_stack: null, failure_kind: 'exhausted',
    service: 'orders', service_version: '1.0', framework: 'spring', entity_key: null, group_id: '3', group_title: 'E: boom', flags: [],
    lineage_origin_id: null, lineage_replay_id: null, replay_count: 0, held_from: null, ingested_at: '2026-12-01T00:00:01.000000Z',
    ...overrides,
  })
  const redactor = createRedactor(DEFAULT_REDACTION_RULES)
  const record = (r: ExportRow) => (parse(csvHeader() + toCsvLine(r, redactor), { bom: true, columns: true }) as Record<string, string>[])[0]

  it('has one column per CSV_COLUMNS entry, with the message fields', () => {
    const rec = record(row())
    expect(Object.keys(rec)).toEqual([...CSV_COLUMNS])
    expect(rec).toMatchObject({ id: '7', source_queue: 'orders.dlq', body: '{"a":1}', content_type: 'application/json', message_id: 'm-1', origin_routing_keys: 'a b', attempts: '2' })
    expect(JSON.parse(rec.headers)).toEqual({ 'x-retries': 3 })
  })

  it('cuts cells at the spreadsheet limit and marks them', () => {
    const long = 'x'.repeat(MAX_CELL_CHARS + 10)
    const rec = record(row({ body_text: long, body_encoding: 'text', error_stack: long }))
    expect(rec.body).toBe(`${'x'.repeat(MAX_CELL_CHARS)}… [truncated]`)
    expect(rec.error_stack.length).toBeLessThan(32_767)
  })

  it('shows binary bodies as base64 and redacts text', () => {
    const rec = record(row({ body: Buffer.from([0, 255, 1]), body_text: null, body_encoding: 'binary', error_message: 'user jane@example.com', entity_key: 'password=hunter2' }))
    expect(rec.body).toBe('base64:AP8B')
    expect(rec.error_message).toBe('user [REDACTED:email]')
    expect(rec.entity_key).toBe('password=[REDACTED]')
  })
})
