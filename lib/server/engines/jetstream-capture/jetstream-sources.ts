import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { entityKeyRuleSchema, entityVersionRuleSchema, type EntityKeyRule, type EntityVersionRule } from '@/lib/shared/schemas/source'

/** An enabled JetStream source: a stream, and one consumer of it or (consumer null) all of them. */
export type JetStreamSource = {
  id: string
  /** `stream/consumer` or `stream/*`. */
  label: string
  stream: string
  consumer: string | null
  /** Delete each captured message from the stream once stored (docs/jetstream.md#removing-captured-messages). */
  removeAfterCapture: boolean
  entityKey: EntityKeyRule | null
  entityVersion: EntityVersionRule | null
}

export async function loadJetStreamSources(options: { sql: Sql }): Promise<JetStreamSource[]> {
  const { rows } = await options.sql.query<{ id: string; queue: string; stream: string; consumer: string | null; remove_after_capture: boolean; entity_key: unknown; entity_version: unknown }>(
    `SELECT id::text, queue, stream, consumer, remove_after_capture, entity_key, entity_version FROM sources WHERE enabled AND kind = 'jetstream' ORDER BY id`,
  )
  return rows.map((r) => {
    const rule = entityKeyRuleSchema.safeParse(r.entity_key)
    const version = entityVersionRuleSchema.safeParse(r.entity_version)
    return {
      id: r.id, label: r.queue, stream: r.stream, consumer: r.consumer, removeAfterCapture: r.remove_after_capture,
      entityKey: rule.success ? rule.data : null, entityVersion: version.success ? version.data : null,
    }
  })
}

/** The source a failure belongs to: the one naming its consumer, else the stream's catch-all; none when neither exists. */
export function sourceForFailure(sources: readonly JetStreamSource[], stream: string, consumer: string): JetStreamSource | null {
  let catchAll: JetStreamSource | null = null
  for (const source of sources) {
    if (source.stream !== stream) continue
    if (source.consumer === consumer) return source
    if (source.consumer === null) catchAll ??= source
  }
  return catchAll
}
