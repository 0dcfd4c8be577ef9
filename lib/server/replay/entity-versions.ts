import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { MESSAGES_FROM } from '@/lib/server/selection/message-filter-sql'
import type { ReplayPlanVersionsDto } from '@/lib/shared/schemas/replay'

/** Entities the plan names one by one (the rest are counted). */
const SAMPLE_ENTITIES = 20
/** Versions listed per sampled entity. */
const SAMPLE_VERSIONS = 10

type VersionsRow = {
  types: string[] | null
  messages: number
  without_version: number
  unparsable: number
  entities: number
  several: number
  newer_entities: number
  older: number
  sample: { source_id: string; entity_key: string; versions: number[]; newest: number; newer_count: number; newer_max: number | null }[] | null
  older_ids: string[] | null
}

/**
 * Entity versions in a replay's selection (docs/ARCHITECTURE.md#entity-versions): over the messages the plan would
 * publish (`eligibleWhere`, on MESSAGES_FROM joined to sources `s`) of sources with a version rule, per (source,
 * entity): the versions it holds, and whether a higher version of the entity is stored outside them (any status: a
 * newer version that was replayed or resolved is still newer). The stored ones are found through
 * dead_letters_entity_idx, one look-up per entity. `olderIds`: the messages below their entity's newest version in the
 * selection, which "only the newest per entity" leaves out and resolves as superseded. Null when no selected message
 * is of a source with a version rule.
 */
export async function planEntityVersions({ sql, eligibleWhere, params, withOlderIds }: {
  sql: Sql
  eligibleWhere: string
  params: unknown[]
  withOlderIds: boolean
}): Promise<{ versions: ReplayPlanVersionsDto | null; olderIds: string[] }> {
  const { rows } = await sql.query<VersionsRow>(
    `WITH sel AS MATERIALIZED (
       SELECT d.id, d.source_id, d.entity_key, d.entity_version, s.entity_version->>'type' AS type,
         'entity-version-unparsable' = ANY(d.flags) AS unparsable
       FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id
       WHERE ${eligibleWhere} AND s.entity_version IS NOT NULL AND d.entity_key IS NOT NULL
     ),
     ent AS MATERIALIZED (
       SELECT source_id, entity_key, count(DISTINCT entity_version)::int AS distinct_versions, max(entity_version) AS newest,
         (array_agg(DISTINCT entity_version ORDER BY entity_version DESC) FILTER (WHERE entity_version IS NOT NULL))[1:${SAMPLE_VERSIONS}] AS versions
       FROM sel GROUP BY 1, 2
     ),
     ent2 AS MATERIALIZED (
       SELECT e.*, coalesce(nw.n, 0) AS newer_count, nw.top AS newer_max
       FROM ent e LEFT JOIN LATERAL (
         SELECT count(*)::int AS n, max(o.entity_version) AS top FROM dead_letters o
         WHERE o.entity_key = e.entity_key AND o.source_id = e.source_id AND o.entity_version > e.newest
       ) nw ON e.newest IS NOT NULL
     )
     SELECT
       (SELECT array_agg(DISTINCT type) FROM sel) AS types,
       (SELECT count(*)::int FROM sel) AS messages,
       (SELECT count(*)::int FROM sel WHERE entity_version IS NULL) AS without_version,
       (SELECT count(*)::int FROM sel WHERE unparsable) AS unparsable,
       (SELECT count(*)::int FROM ent) AS entities,
       (SELECT count(*)::int FROM ent WHERE distinct_versions > 1) AS several,
       (SELECT count(*)::int FROM ent2 WHERE newer_count > 0) AS newer_entities,
       (SELECT count(*)::int FROM sel JOIN ent USING (source_id, entity_key) WHERE sel.entity_version < ent.newest) AS older,
       (SELECT json_agg(x) FROM (
          SELECT source_id::text, entity_key, versions, newest, newer_count, newer_max FROM ent2
          WHERE distinct_versions > 1 OR newer_count > 0
          ORDER BY newer_count > 0 DESC, distinct_versions DESC, entity_key LIMIT ${SAMPLE_ENTITIES}
        ) x) AS sample,
       CASE WHEN $${params.length + 1}::boolean THEN
         (SELECT array_agg(sel.id::text ORDER BY sel.id) FROM sel JOIN ent USING (source_id, entity_key) WHERE sel.entity_version < ent.newest)
       END AS older_ids`,
    [...params, withOlderIds],
  )
  const r = rows[0]
  if (!r || r.messages === 0) return { versions: null, olderIds: [] }
  const types = (r.types ?? []).filter((t): t is 'number' | 'time' => t === 'number' || t === 'time')
  return {
    versions: {
      type: types.length === 1 ? types[0] : null,
      messages: r.messages,
      withoutVersion: r.without_version,
      unparsable: r.unparsable,
      entities: r.entities,
      entitiesWithSeveral: r.several,
      entitiesWithNewerStored: r.newer_entities,
      older: r.older,
      sample: (r.sample ?? []).map((s) => ({
        sourceId: s.source_id,
        entityKey: s.entity_key,
        versions: [...(s.versions ?? [])].sort((a, b) => a - b),
        newest: s.newest,
        newerStored: s.newer_count,
        newestStored: s.newer_max,
      })),
    },
    olderIds: r.older_ids ?? [],
  }
}
