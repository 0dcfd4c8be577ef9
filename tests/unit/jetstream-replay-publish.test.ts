import { describe, expect, it } from 'vitest'
import { buildJetStreamPublish, isNatsServerHeader, reservedSubjectReason } from '@/lib/server/replay/jetstream-publish'
import { publishFailure } from '@/lib/server/engines/replay-executor/jetstream-publisher'
import { JetStreamApiError } from '@nats-io/jetstream'
import { errors } from '@nats-io/transport-node'

const stored = (headers: Record<string, unknown>, body = Buffer.from('{"orderId":"o-1"}')) => ({
  id: '42', body, properties: {}, headers: headers as never, lineageOriginId: null, replayCount: 0, headerBlockKept: false,
})
const stamp = { kind: 'replay' as const, replayId: 'r-1', actor: 'alice' }
const limits = { maxBodyBytes: 1024, maxPayload: 1_048_576 }

describe('a JetStream replay copy', () => {
  it('keeps the data and the headers, repeated names once per value, and stamps the lineage', () => {
    const build = buildJetStreamPublish(stored({
      'X-Tag': { t: 'A', v: [{ t: 'S', v: 'blue' }, { t: 'S', v: 'green' }] },
      'Nats-Error-Type': { t: 'S', v: 'OutOfStock' },
    }), stamp, limits)
    expect(build).toEqual({
      ok: true,
      data: Buffer.from('{"orderId":"o-1"}'),
      headers: [
        ['X-Tag', 'blue'], ['X-Tag', 'green'], ['Nats-Error-Type', 'OutOfStock'],
        ['x-lazarus-origin-id', '42'], ['x-lazarus-replay-id', 'r-1'], ['x-lazarus-replay-count', '1'], ['x-lazarus-replayed-by', 'alice'],
      ],
    })
  })

  it('never sends back what the server reads as an instruction or writes itself', () => {
    const build = buildJetStreamPublish(stored({
      'Nats-Msg-Id': { t: 'S', v: 'order-1' }, 'Nats-Expected-Last-Sequence': { t: 'S', v: '7' }, 'Nats-Rollup': { t: 'S', v: 'sub' },
      'Nats-Stream': { t: 'S', v: 'ORDERS' }, 'nats-sequence': { t: 'S', v: '9' }, 'Nats-TTL': { t: 'S', v: '1s' }, 'X-Kept': { t: 'S', v: 'yes' },
      'x-lazarus-replay-id': { t: 'S', v: 'forged' },
    }), stamp, limits)
    expect(build.ok && build.headers.filter(([name]) => !name.startsWith('x-lazarus-'))).toEqual([['X-Kept', 'yes']])
    expect(build.ok && build.headers.find(([name]) => name === 'x-lazarus-replay-id')).toEqual(['x-lazarus-replay-id', 'r-1'])
    expect(isNatsServerHeader('NATS-EXPECTED-STREAM')).toBe(true)
    expect(isNatsServerHeader('Nats-Error-Type')).toBe(false)
  })

  it('says why a message cannot go out as stored', () => {
    expect(buildJetStreamPublish(stored({}, Buffer.alloc(2048)), stamp, limits)).toEqual({ ok: false, message: 'too large: body of 2048 bytes exceeds the replay limit of 1024' })
    expect(buildJetStreamPublish(stored({}, Buffer.alloc(600)), stamp, { maxBodyBytes: 1024, maxPayload: 512 })).toEqual({ ok: false, message: "too large: body of 600 bytes exceeds the NATS server's max_payload of 512" })
    expect(buildJetStreamPublish({ ...stored({}), headerBlockKept: true }, stamp, limits)).toMatchObject({ ok: false, message: expect.stringContaining('header block could not be read') })
    expect(buildJetStreamPublish(stored({ 'X-Nested': { t: 'F', v: {} } }), stamp, limits)).toEqual({ ok: false, message: 'cannot replay: header "X-Nested" cannot be written as a NATS header' })
  })

  it('refuses the server\'s subjects, inboxes and wildcards as targets', () => {
    for (const subject of ['$JS.API.STREAM.DELETE.ORDERS', '$SYS.REQ.SERVER.PING', '$KV.config.key', '$O.bucket.chunk', '_INBOX.abc', 'orders.*', 'orders.>', 'orders..x', '']) {
      expect(reservedSubjectReason(subject), subject).not.toBeNull()
    }
    expect(reservedSubjectReason('orders.created')).toBeNull()
  })

  it('tells an unroutable subject from a failed publish', () => {
    const noStream = Object.assign(new Error('jetstream is not enabled'), { name: 'JetStreamNotEnabled' })
    expect(publishFailure(noStream, 'orders.x', 5000)).toEqual({ status: 'unroutable', reason: 'unroutable: no stream captures subject "orders.x"' })
    expect(publishFailure(new errors.TimeoutError(), 'orders.x', 5000)).toEqual({ status: 'failed', reason: 'not confirmed: no PubAck from the NATS server within 5000 ms' })
    const refused = new JetStreamApiError({ code: 400, err_code: 10054, description: 'message size exceeds maximum allowed' })
    expect(publishFailure(refused, 'orders.x', 5000)).toMatchObject({ status: 'failed', reason: expect.stringContaining('refused by the stream: message size exceeds maximum allowed') })
  })
})
