import 'server-only'
import { z } from 'zod'
import type { JetStreamFailure } from '@/lib/server/ingest/build-jetstream-row'

// Where the advisories are kept is the sources domain's to say (the sources page reads it too).
export { advisorySubjects } from '@/lib/server/sources/advisory-keepers'

const TYPES = {
  'io.nats.jetstream.advisory.v1.max_deliver': 'max-deliveries',
  'io.nats.jetstream.advisory.v1.terminated': 'terminated',
} as const

/** nats-server 2.9's fields; `reason` arrives from 2.11 on, with `term(reason)`. */
const advisorySchema = z.object({
  type: z.enum(Object.keys(TYPES) as [keyof typeof TYPES, ...(keyof typeof TYPES)[]]),
  id: z.string().min(1).max(200),
  timestamp: z.string().min(1).max(64),
  stream: z.string().min(1).max(255),
  consumer: z.string().min(1).max(255),
  stream_seq: z.number().int().positive(),
  deliveries: z.number().int().nonnegative(),
  reason: z.string().max(64 * 1024).optional(),
})

/**
 * The failure an advisory reports; null for anything else the advisory stream holds (a team's stream may keep other
 * advisories too), which the capture acknowledges and skips.
 */
export function parseAdvisory(data: Uint8Array): JetStreamFailure | null {
  let json: unknown
  try {
    json = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'))
  } catch {
    return null
  }
  const parsed = advisorySchema.safeParse(json)
  if (!parsed.success) return null
  const advisory = parsed.data
  const at = new Date(advisory.timestamp)
  return {
    kind: TYPES[advisory.type],
    advisoryId: advisory.id,
    at: Number.isNaN(at.getTime()) ? new Date() : at,
    stream: advisory.stream,
    consumer: advisory.consumer,
    streamSeq: advisory.stream_seq,
    deliveries: advisory.deliveries,
    reason: advisory.reason?.trim() ? advisory.reason : null,
  }
}
