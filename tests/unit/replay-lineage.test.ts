import { describe, expect, it } from 'vitest'
import { TYPED_TABLE, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { buildRow } from '@/lib/server/ingest/build-row'

function message(typed: TypedTable) {
  const headers = Object.defineProperty({}, TYPED_TABLE, { value: typed })
  return {
    content: Buffer.from('{"invoice":"inv-1"}'),
    fields: { exchange: '', routingKey: 'billing.dlq', redelivered: false, deliveryTag: 1, consumerTag: 'c' },
    properties: { headers },
  } as never
}

const build = (typed: TypedTable) => buildRow({ queue: 'billing.dlq', message: message(typed), maxBodyBytes: 1024, now: new Date('2026-11-30T12:00:00Z') })

// A replayed copy that died again carries Lazarus' lineage headers; the row links to the replay it came from.
describe('replay lineage at ingestion', () => {
  it('reads the origin, the replay count and the replay id', () => {
    const row = build({
      'x-lazarus-origin-id': { t: 'S', v: '41' },
      'x-lazarus-replay-id': { t: 'S', v: '2f1c9a7e-0000-4000-8000-000000000001' },
      'x-lazarus-replay-count': { t: 'l', v: '2' },
      'x-lazarus-replayed-by': { t: 'S', v: 'alice' },
    })
    expect(row).toMatchObject({ lineageOriginId: '41', replayCount: 2, lineageReplayId: '2f1c9a7e-0000-4000-8000-000000000001' })
  })

  it('has no lineage for a first failure', () => {
    expect(build({ 'x-error-type': { t: 'S', v: 'Boom' } })).toMatchObject({ lineageOriginId: null, replayCount: 0, lineageReplayId: null })
  })

  it('ignores a blank or oversized replay id and flags it', () => {
    expect(build({ 'x-lazarus-replay-id': { t: 'S', v: '   ' } }).lineageReplayId).toBeNull()
    const long = build({ 'x-lazarus-replay-id': { t: 'S', v: 'r'.repeat(500) } })
    expect(long.lineageReplayId).toHaveLength(128)
    expect(long.flags).toContain('lineage-malformed')
  })
})
