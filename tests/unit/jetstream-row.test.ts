import { describe, expect, it } from 'vitest'
import { buildJetStreamRow, type JetStreamFailure, type JetStreamStoredMessage } from '@/lib/server/ingest/build-jetstream-row'
import { parseNatsHeaderBlock, readNatsHeaderBlock, typedToNatsHeaderBlock } from '@/lib/server/ingest/nats-headers'
import { parseAdvisory } from '@/lib/server/engines/jetstream-capture/advisory'
import { sourceForFailure, type JetStreamSource } from '@/lib/server/engines/jetstream-capture/jetstream-sources'

const block = (text: string) => Buffer.from(text.replaceAll('\n', '\r\n'), 'utf8')

describe('NATS header blocks', () => {
  it('keep names in first-seen order, a repeated name as an array, and give the same bytes back', () => {
    const raw = block('NATS/1.0\nX-Multi: a\nX-Multi: b\nNats-Error-Type: Boom\n\n')
    expect(parseNatsHeaderBlock(raw)).toEqual([{ name: 'X-Multi', value: 'a' }, { name: 'X-Multi', value: 'b' }, { name: 'Nats-Error-Type', value: 'Boom' }])
    const { table, keepBlock } = readNatsHeaderBlock(raw)
    expect(table).toEqual({ 'X-Multi': { t: 'A', v: [{ t: 'S', v: 'a' }, { t: 'S', v: 'b' }] }, 'Nats-Error-Type': { t: 'S', v: 'Boom' } })
    expect(keepBlock).toBe(false)
    expect(typedToNatsHeaderBlock(table)?.equals(raw)).toBe(true)
  })

  it('are kept as bytes when the typed form cannot give them back exactly', () => {
    // A repeated name that is not adjacent, a status line, odd spacing, bytes that are not UTF-8, no preamble.
    for (const raw of [
      block('NATS/1.0\nA: 1\nB: 2\nA: 3\n\n'),
      block('NATS/1.0 503\n\n'),
      block('NATS/1.0\nA:1\n\n'),
      Buffer.concat([block('NATS/1.0\nA: '), Buffer.from([0xff, 0xfe]), block('\n\n')]),
      block('HTTP/1.1\nA: 1\n\n'),
    ]) expect(readNatsHeaderBlock(raw).keepBlock, raw.toString('latin1')).toBe(true)
    expect(readNatsHeaderBlock(null)).toEqual({ table: {}, keepBlock: false })
  })

  it('are not written from a table a NATS header cannot carry', () => {
    expect(typedToNatsHeaderBlock({ A: { t: 'I', v: 1 } })).toBeNull()
    expect(typedToNatsHeaderBlock({ A: { t: 'S', v: 'line\r\nInjected: yes' } })).toBeNull()
    expect(typedToNatsHeaderBlock({ 'A: B': { t: 'S', v: 'x' } })).toBeNull()
  })
})

describe('JetStream failure advisories', () => {
  const advisory = (fields: Record<string, unknown>) => new TextEncoder().encode(JSON.stringify(fields))

  it('read as a failure with its stream, consumer, sequence and deliveries', () => {
    expect(parseAdvisory(advisory({
      type: 'io.nats.jetstream.advisory.v1.max_deliver', id: 'a1', timestamp: '2026-12-07T17:06:27.019602973Z',
      stream: 'ORDERS', consumer: 'worker', stream_seq: 7, deliveries: 3,
    }))).toEqual({ kind: 'max-deliveries', advisoryId: 'a1', at: new Date('2026-12-07T17:06:27.019Z'), stream: 'ORDERS', consumer: 'worker', streamSeq: 7, deliveries: 3, reason: null })
    expect(parseAdvisory(advisory({
      type: 'io.nats.jetstream.advisory.v1.terminated', id: 'a2', timestamp: '2026-12-07T17:06:27Z',
      stream: 'ORDERS', consumer: 'worker', consumer_seq: 2, stream_seq: 2, deliveries: 1, reason: 'schema v3 unsupported',
    }))).toMatchObject({ kind: 'terminated', reason: 'schema v3 unsupported' })
  })

  it('are null for anything else a stream may hold', () => {
    expect(parseAdvisory(advisory({ type: 'io.nats.jetstream.advisory.v1.nak', id: 'x', timestamp: 't', stream: 'S', consumer: 'c', stream_seq: 1, deliveries: 1 }))).toBeNull()
    expect(parseAdvisory(advisory({ type: 'io.nats.jetstream.advisory.v1.max_deliver', id: 'x', timestamp: 't', stream: 'S', consumer: 'c', stream_seq: -1, deliveries: 1 }))).toBeNull()
    expect(parseAdvisory(new TextEncoder().encode('not json'))).toBeNull()
  })

  it('belong to the source naming their consumer, else to the stream\'s catch-all', () => {
    const source = (id: string, stream: string, consumer: string | null): JetStreamSource => ({ id, label: `${stream}/${consumer ?? '*'}`, stream, consumer, removeAfterCapture: false, entityKey: null, entityVersion: null })
    const sources = [source('1', 'ORDERS', null), source('2', 'ORDERS', 'billing'), source('3', 'PAYMENTS', 'refunds')]
    expect(sourceForFailure(sources, 'ORDERS', 'billing')?.id).toBe('2')
    expect(sourceForFailure(sources, 'ORDERS', 'shipping')?.id).toBe('1')
    expect(sourceForFailure(sources, 'PAYMENTS', 'other')).toBeNull()
    expect(sourceForFailure(sources, 'UNKNOWN', 'billing')).toBeNull()
  })
})

describe('a captured JetStream failure as a row', () => {
  const failure: JetStreamFailure = { kind: 'max-deliveries', advisoryId: 'adv-1', at: new Date('2026-12-07T10:00:00Z'), stream: 'ORDERS', consumer: 'worker', streamSeq: 42, deliveries: 3, reason: null }
  const message = (headers: string | null, data = '{"orderId":"o-42","customer":7}'): JetStreamStoredMessage => ({
    subject: 'orders.created', seq: 42, time: new Date('2026-12-07T09:59:00Z'), headerBlock: headers === null ? null : block(headers), data: Buffer.from(data),
  })
  const build = (overrides: Partial<Parameters<typeof buildJetStreamRow>[0]> = {}) =>
    buildJetStreamRow({ sourceLabel: 'ORDERS/worker', failure, message: message(null), redelivered: false, maxBodyBytes: 1024 * 1024, ...overrides })

  it('keeps the data byte for byte and the JetStream facts as its properties', () => {
    const row = build({ message: message('NATS/1.0\nNats-Msg-Id: order-42\nX-Tenant: a\nX-Tenant: b\n\n') })
    expect(row.body.toString()).toBe('{"orderId":"o-42","customer":7}')
    expect(JSON.parse(row.propertiesJson)).toEqual({
      subject: 'orders.created', stream: 'ORDERS', streamSeq: 42, consumer: 'worker', deliveries: 3, advisory: 'max-deliveries', advisoryId: 'adv-1',
      publishedAt: '2026-12-07T09:59:00.000Z', messageId: 'order-42',
    })
    expect(JSON.parse(row.headersJson)).toEqual({ 'Nats-Msg-Id': { t: 'S', v: 'order-42' }, 'X-Tenant': { t: 'A', v: [{ t: 'S', v: 'a' }, { t: 'S', v: 'b' }] } })
    expect(row).toMatchObject({ deliveryExchange: '', deliveryRoutingKey: 'orders.created', originExchange: null, originRoutingKeys: ['orders.created'], originQueue: 'ORDERS/worker', attempts: 3, deathReason: 'max-deliveries', failedAt: failure.at, bodyEncoding: 'json', framework: 'nats' })
  })

  it('without error headers is grouped by where and why it failed', () => {
    const row = build()
    expect(row.title).toBe('no error metadata: max deliveries reached in ORDERS/worker')
    expect(row.failureKind).toBe('delivery-limit')
    expect(build({ failure: { ...failure, kind: 'terminated' } })).toMatchObject({ title: 'no error metadata: terminated in ORDERS/worker', failureKind: 'exhausted' })
    expect(build({ sourceLabel: 'ORDERS/other' }).signature).not.toBe(row.signature)
    expect(build({ failure: { ...failure, streamSeq: 43 } }).signature).toBe(row.signature)
  })

  it('reads the error from Nats-Error-* headers, the NATS services error, or the terminate reason', () => {
    const typed = build({ message: message('NATS/1.0\nNats-Error-Type: com.acme.InvalidOrderException\nNats-Error-Message: order o-42 has no lines\nNats-Service: billing\n\n') })
    expect(typed).toMatchObject({ errorType: 'com.acme.InvalidOrderException', errorMessage: 'order o-42 has no lines', service: 'billing', framework: 'nats' })
    expect(typed.title).toContain('InvalidOrderException')
    expect(build({ message: message('NATS/1.0\nNats-Service-Error: upstream timeout\nNats-Service-Error-Code: 503\n\n') }).errorMessage).toBe('upstream timeout')
    expect(build({ failure: { ...failure, kind: 'terminated', reason: 'schema v3 unsupported' } }).errorMessage).toBe('schema v3 unsupported')
    // Lazarus' own headers win over the NATS aliases.
    expect(build({ message: message('NATS/1.0\nx-error-type: Own\nNats-Error-Type: Alias\n\n') })).toMatchObject({ errorType: 'Own', framework: 'lazarus' })
  })

  it('of a message the stream no longer holds is a flagged record of the advisory', () => {
    const row = build({ message: null })
    expect(row.flags).toContain('message-gone')
    expect(row.body.length).toBe(0)
    expect(JSON.parse(row.propertiesJson)).toMatchObject({ subject: null, stream: 'ORDERS', streamSeq: 42 })
  })

  it('has one fingerprint per stream, consumer, sequence and kind of failure', () => {
    const fp = (f: Partial<JetStreamFailure>) => build({ failure: { ...failure, ...f } }).fingerprint.toString('hex')
    expect(fp({})).toBe(fp({ advisoryId: 'redelivered-copy', deliveries: 4 }))
    expect(new Set([fp({}), fp({ consumer: 'other' }), fp({ streamSeq: 43 }), fp({ kind: 'terminated' }), fp({ stream: 'OTHER' })]).size).toBe(5)
  })

  it('keeps a header block the typed form cannot reproduce, and applies the entity rule', () => {
    const row = build({ message: message('NATS/1.0\nA: 1\nB: 2\nA: 3\n\n'), entityKeyRule: { kind: 'jsonPointer', pointer: '/orderId' } })
    expect(row.flags).toContain('nats-header-block-kept')
    expect(Buffer.from(JSON.parse(row.propertiesJson).headerBlock, 'base64').toString()).toBe('NATS/1.0\r\nA: 1\r\nB: 2\r\nA: 3\r\n\r\n')
    expect(row.entityKey).toBe('o-42')
  })
})
