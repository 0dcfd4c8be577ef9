import 'server-only'
import { getDb } from '@/lib/server/db'
import type { GroupDto, ListGroupsQuery } from '@/lib/shared/schemas/group'

type GroupRow = {
  id: string; title: string; error_type: string | null; signature: string; count: number; first_seen: Date; last_seen: Date
  last5: number; last60: number; sources: string[]; services: string[]; service_versions: string[]; failure_kinds: string[]
  status: string; note: string | null; ticket_url: string | null
}

const ORDER = { count: 'g.count DESC', rate: 'last5 DESC, last60 DESC', lastSeen: 'g.last_seen DESC' } as const

/** Groups with counters maintained at ingestion; rates come from the per-minute arrival buckets. */
export async function listGroups(query: ListGroupsQuery): Promise<{ groups: GroupDto[] }> {
  const { sql } = await getDb()
  const params: unknown[] = []
  const where: string[] = []
  const add = (clause: (p: string) => string, value: unknown) => {
    params.push(value)
    where.push(clause(`$${params.length}`))
  }
  if (query.source) add((p) => `${p} = ANY(g.sources)`, query.source)
  if (query.status) add((p) => `g.status = ${p}`, query.status)
  if (query.failureKind) add((p) => `${p} = ANY(g.failure_kinds)`, query.failureKind)
  if (query.service) add((p) => `${p} = ANY(g.services)`, query.service)
  params.push(query.limit)
  const { rows } = await sql.query<GroupRow>(
    `SELECT g.id::text, g.title, g.error_type, g.signature, g.count::float8 AS count, g.first_seen, g.last_seen,
       COALESCE(r.last5, 0)::float8 / 5 AS last5, COALESCE(r.last60, 0)::float8 / 60 AS last60,
       g.sources, g.services, g.service_versions, g.failure_kinds, g.status, g.note, g.ticket_url
     FROM error_groups g
     LEFT JOIN LATERAL (
       SELECT sum(a.count) FILTER (WHERE a.minute >= date_trunc('minute', now()) - interval '4 minutes') AS last5,
              sum(a.count) AS last60
       FROM group_arrivals a WHERE a.group_id = g.id AND a.minute >= date_trunc('minute', now()) - interval '59 minutes'
     ) r ON TRUE
     WHERE g.count > 0 ${where.length ? 'AND ' + where.join(' AND ') : ''}
     ORDER BY ${ORDER[query.sort]}, g.id DESC LIMIT $${params.length}`,
    params,
  )
  return {
    groups: rows.map((r) => ({
      id: r.id, title: r.title, errorType: r.error_type, signature: r.signature, count: r.count,
      firstSeen: new Date(r.first_seen).toISOString(), lastSeen: new Date(r.last_seen).toISOString(),
      ratePerMinute: { last5: round(r.last5), last60: round(r.last60) },
      sources: r.sources, services: r.services, serviceVersions: r.service_versions, failureKinds: r.failure_kinds,
      status: r.status, note: r.note, ticketUrl: r.ticket_url,
    })),
  }
}

const round = (n: number) => Math.round(n * 100) / 100
