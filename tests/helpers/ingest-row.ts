import { createHash } from 'node:crypto'
import type { IngestRow } from '@/lib/server/ingest/types'

let serial = 0

/**
 * A stored-ready dead letter for tests that seed through storeBatch: a unique fingerprint, a small JSON body
 * (or `body`, whose text view is filled in), one error group, failed now. Override anything.
 */
export function ingestRow(overrides: Partial<IngestRow> & { body?: Buffer } = {}): IngestRow {
  const body = overrides.body ?? Buffer.from(`{"n":${serial}}`)
  return {
    fingerprint: createHash('sha256').update(`test-row-${process.pid}-${serial++}`).digest(),
    redelivered: false, body, bodyEncoding: 'json', bodyPreview: body.toString('utf8'),
    propertiesJson: '{}', headersJson: '{}', deliveryExchange: '', deliveryRoutingKey: 'dlq',
    deathReason: 'rejected', attempts: 1, originExchange: null, originRoutingKeys: [], originQueue: null,
    firstDeathAt: null, lastDeathAt: null, failedAt: new Date(),
    errorType: 'com.acme.Boom', errorMessage: 'boom', errorStack: null, failureKind: 'exhausted',
    service: 'svc', serviceVersion: '1', framework: 'lazarus', entityKey: null,
    signature: 'v1:test-boom', title: 'Boom: boom', messagePattern: null,
    flags: [], lineageOriginId: null, replayCount: 0, status: 'dead',
    ...overrides,
  }
}
