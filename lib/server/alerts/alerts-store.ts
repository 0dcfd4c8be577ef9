import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { AlertRuleDto, AlertWebhookDto } from '@/lib/shared/schemas/alert'
import { ALERT_EVENT_COLUMNS, alertEventColumns, type AlertEventRow } from './alert-dto'

/**
 * The SQL of the alert settings and history as the API reads and edits them. The evaluator and the delivery engine
 * keep their own (lib/server/engines/alert-evaluator/).
 */

type RuleRow = {
  id: string; kind: AlertRuleDto['kind']; source_id: string | null; queue: string | null; group_id: string | null; title: string | null
  threshold: number | null; min_severity: AlertRuleDto['minSeverity']; window_minutes: number; cooldown_minutes: number; enabled: boolean; created_by: string; created_at: Date; evaluated_at: Date | null; firing: number
}

const toRuleDto = (r: RuleRow): AlertRuleDto => ({
  id: r.id,
  kind: r.kind,
  source: r.source_id ? { id: r.source_id, queue: r.queue ?? '' } : null,
  group: r.group_id ? { id: r.group_id, title: r.title ?? '' } : null,
  thresholdPerMinute: r.threshold,
  minSeverity: r.min_severity,
  windowMinutes: r.window_minutes,
  cooldownMinutes: r.cooldown_minutes,
  enabled: r.enabled,
  createdBy: r.created_by,
  createdAt: new Date(r.created_at).toISOString(),
  evaluatedAt: r.evaluated_at ? new Date(r.evaluated_at).toISOString() : null,
  firing: r.firing,
})

/** Rules with their source's queue, group's title and how many subjects are in breach; `id`: that rule only. */
export async function selectAlertRules({ sql, id }: { sql: Sql; id?: string }): Promise<AlertRuleDto[]> {
  const { rows } = await sql.query<RuleRow>(
    `SELECT r.id::text, r.kind, r.source_id::text, s.queue, r.group_id::text, g.title, r.threshold_per_minute::float8 AS threshold,
       r.min_severity, r.window_minutes, r.cooldown_minutes, r.enabled, r.created_by, r.created_at, r.evaluated_at,
       (SELECT count(*) FROM alert_states st WHERE st.rule_id = r.id AND st.firing)::int AS firing
     FROM alert_rules r LEFT JOIN sources s ON s.id = r.source_id LEFT JOIN error_groups g ON g.id = r.group_id
     ${id === undefined ? '' : 'WHERE r.id = $1::bigint'} ORDER BY r.id`,
    id === undefined ? [] : [id],
  )
  return rows.map(toRuleDto)
}

/** The latest breach event of every subject that is still in breach, newest first. */
export async function selectFiringEvents({ sql }: { sql: Sql }): Promise<AlertEventRow[]> {
  const { rows } = await sql.query<AlertEventRow>(
    `SELECT ${alertEventColumns('e')}
     FROM alert_states st
     JOIN LATERAL (
       SELECT * FROM alert_events e WHERE e.rule_id = st.rule_id AND e.state = 'firing'
         AND e.subject_type || ':' || e.subject_id = st.subject_key ORDER BY e.id DESC LIMIT 1
     ) e ON true
     WHERE st.firing ORDER BY e.at DESC`,
  )
  return rows
}

/** A page of the alert history, newest first: `limit` events with ids below `before` (null: the newest). */
export async function selectAlertEvents({ sql, before, limit }: { sql: Sql; before: string | null; limit: number }): Promise<AlertEventRow[]> {
  const { rows } = await sql.query<AlertEventRow>(
    `SELECT ${ALERT_EVENT_COLUMNS} FROM alert_events WHERE ($1::bigint IS NULL OR id < $1::bigint) ORDER BY id DESC LIMIT $2`,
    [before, limit],
  )
  return rows
}

export async function rowExists({ sql, table, id }: { sql: Sql; table: 'sources' | 'error_groups'; id: string }): Promise<boolean> {
  const { rows } = await sql.query(`SELECT 1 FROM ${table} WHERE id = $1::bigint`, [id])
  return rows.length > 0
}

export type NewAlertRule = {
  kind: AlertRuleDto['kind']
  sourceId: string | null
  groupId: string | null
  thresholdPerMinute: number | null
  minSeverity: AlertRuleDto['minSeverity']
  windowMinutes: number
  cooldownMinutes: number
  createdBy: string
}

export async function insertAlertRule({ sql, rule }: { sql: Sql; rule: NewAlertRule }): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO alert_rules (kind, source_id, group_id, threshold_per_minute, min_severity, window_minutes, cooldown_minutes, created_by)
     VALUES ($1, $2::bigint, $3::bigint, $4, $5, $6, $7, $8) RETURNING id::text`,
    [rule.kind, rule.sourceId, rule.groupId, rule.thresholdPerMinute, rule.minSeverity, rule.windowMinutes, rule.cooldownMinutes, rule.createdBy],
  )
  return rows[0].id
}

/** Enables or disables a rule; disabling clears its breach state. False when there is no such rule. */
export async function setAlertRuleEnabled({ sql, id, enabled }: { sql: Sql; id: string; enabled: boolean }): Promise<boolean> {
  const changed = await sql.execute('UPDATE alert_rules SET enabled = $2 WHERE id = $1::bigint', [id, enabled])
  if (changed > 0 && !enabled) await sql.query('DELETE FROM alert_states WHERE rule_id = $1::bigint', [id])
  return changed > 0
}

/** False when there is no such rule. Its history stays (rule_id becomes NULL). */
export async function deleteAlertRuleRow({ sql, id }: { sql: Sql; id: string }): Promise<boolean> {
  return (await sql.execute('DELETE FROM alert_rules WHERE id = $1::bigint', [id])) > 0
}

type WebhookRow = { id: string; url: string; enabled: boolean; created_at: Date; format: AlertWebhookDto['format']; routing_key: string | null }
const WEBHOOK_COLUMNS = 'id::text, url, enabled, created_at, format, routing_key'

// The routing key is a secret (anyone holding it can open and close incidents): only its end is ever shown back.
const toWebhookDto = (row: WebhookRow): AlertWebhookDto => ({
  id: row.id,
  url: row.url,
  enabled: row.enabled,
  createdAt: new Date(row.created_at).toISOString(),
  format: row.format,
  routingKeyHint: row.routing_key === null ? null : `••••${row.routing_key.slice(-4)}`,
})

export async function selectWebhooks({ sql }: { sql: Sql }): Promise<AlertWebhookDto[]> {
  const { rows } = await sql.query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM alert_webhooks ORDER BY alert_webhooks.id`)
  return rows.map(toWebhookDto)
}

/**
 * Adds a webhook unless `max` are configured already (then null). Takes a self-conflicting lock on the table until
 * the transaction ends (call it inside one): two concurrent adds cannot both see room for one more.
 */
export async function insertWebhookWithin({ sql, url, format = 'generic', routingKey = null, max }: {
  sql: Sql
  url: string
  format?: AlertWebhookDto['format']
  routingKey?: string | null
  max: number
}): Promise<AlertWebhookDto | null> {
  await sql.query('LOCK TABLE alert_webhooks IN SHARE ROW EXCLUSIVE MODE')
  const { rows: count } = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM alert_webhooks')
  if (count[0].n >= max) return null
  const { rows } = await sql.query<WebhookRow>(
    `INSERT INTO alert_webhooks (url, format, routing_key) VALUES ($1, $2, $3) RETURNING ${WEBHOOK_COLUMNS}`,
    [url, format, routingKey],
  )
  return toWebhookDto(rows[0])
}

/** Deletes a webhook; returns its URL, or null when there is no such webhook. */
export async function deleteWebhookRow({ sql, id }: { sql: Sql; id: string }): Promise<string | null> {
  const { rows } = await sql.query<{ url: string }>('DELETE FROM alert_webhooks WHERE id = $1::bigint RETURNING url', [id])
  return rows[0]?.url ?? null
}
