import 'server-only'
import { HELD_ENTITY_HEADER, HELD_FROM_HEADER, HELD_HEADER_PREFIX } from '@/packages/guard/src/protocol'
import type { IngestRow } from './types'
import type { TypedTable, TypedValue } from '@/lib/server/platform/broker/typed-fields'
import { HELD_SIGNATURE, HELD_TITLE } from '@/lib/server/pauses/held-row'

/** RabbitMQ queue names are at most 255 bytes; entity keys are capped like the normaliser's. */
const MAX_QUEUE_CHARS = 255
const MAX_ENTITY_CHARS = 1024

function headerText(value: TypedValue | undefined, cap: number): string | null {
  if (!value) return null
  let text: string | null = null
  if (value.t === 'S') text = 'v' in value ? value.v : Buffer.from(value.b64, 'base64').toString('utf8')
  else if (value.t === 'x') text = Buffer.from(value.b64, 'base64').toString('utf8')
  if (text === null || text === '' || text.length > cap || text.includes('\u0000')) return null
  return text
}

/**
 * A delivery from a hold source: not a failure but a message a guard parked while its entity was paused. It is
 * stored with status 'held', the queue it came from, and the entity the guard matched, in the fixed held group.
 * The guard's x-lazarus-held-* headers move into those columns: the stored headers are the application's own, so
 * a release re-publishes the message as it was. (The fingerprint, computed before, still includes the per-hold id,
 * so two identical messages held twice are two rows.)
 */
export function asHeldRow(row: IngestRow, headers: TypedTable, now: Date): IngestRow {
  const heldFrom = headerText(headers[HELD_FROM_HEADER], MAX_QUEUE_CHARS)
  const entityKey = headerText(headers[HELD_ENTITY_HEADER], MAX_ENTITY_CHARS) ?? row.entityKey
  const stored = JSON.parse(row.headersJson) as Record<string, unknown>
  for (const key of Object.keys(stored)) if (key.startsWith(HELD_HEADER_PREFIX)) delete stored[key]
  return {
    ...row,
    headersJson: JSON.stringify(stored),
    status: 'held',
    heldFrom,
    entityKey,
    signature: HELD_SIGNATURE,
    title: HELD_TITLE,
    messagePattern: null,
    topFrames: [],
    errorType: null,
    errorMessage: null,
    errorStack: null,
    failureKind: 'unknown',
    failedAt: now,
    // Without the header Lazarus cannot tell where the message belongs; it stays held until an operator acts.
    flags: heldFrom === null ? [...row.flags, 'held-without-origin'] : row.flags,
  }
}
