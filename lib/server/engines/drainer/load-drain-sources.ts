import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { entityKeyRuleSchema, entityVersionRuleSchema, type EntityKeyRule, type EntityVersionRule } from '@/lib/shared/schemas/source'

/** kind 'hold': lazarus.hold, whose deliveries are messages pause guards parked (stored with status 'held'). */
export type DrainSource = {
  id: string
  vhost: string
  queue: string
  entityKey: EntityKeyRule | null
  /** Absent or null: no entity versions are read (docs/ARCHITECTURE.md#entity-versions). */
  entityVersion?: EntityVersionRule | null
  kind?: 'dlq' | 'hold'
}

/** The enabled sources, in id order; an entity-key or version rule that no longer parses counts as none. */
export async function loadDrainSources(options: { sql: Sql }): Promise<DrainSource[]> {
  const { rows } = await options.sql.query<{ id: string; vhost: string; queue: string; entity_key: unknown; entity_version: unknown; kind: string }>(
    `SELECT id::text, vhost, queue, entity_key, entity_version, kind FROM sources WHERE enabled AND kind <> 'jetstream' ORDER BY id`,
  )
  return rows.map((r) => {
    const rule = entityKeyRuleSchema.safeParse(r.entity_key)
    const version = entityVersionRuleSchema.safeParse(r.entity_version)
    return {
      id: r.id, vhost: r.vhost, queue: r.queue, entityKey: rule.success ? rule.data : null,
      entityVersion: version.success ? version.data : null, kind: r.kind === 'hold' ? 'hold' : 'dlq',
    }
  })
}
