import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { ALERT_EVENT_COLUMNS, alertEventColumns, type AlertEventRow } from '@/lib/server/alerts/alert-dto'
import type { AlertEventDto, AlertRuleDto, WebhookFormat } from '@/lib/shared/schemas/alert'
import type { FindingSeverity } from '@/lib/shared/schemas/topology'
import { MAX_WEBHOOKS } from '@/lib/shared/schemas/webhook-settings'

/**
 * The alert evaluator's SQL: rules and their states, arrival rates, new groups, the events it records, and their
 * delivery. The request-time alert operations (lib/server/alerts) read and write rules and webhooks.
 */

// Any lock id will do as long as only alerts use it: one evaluator at a time across all processes.
const EVALUATION_LOCK = 7_746_001

export type AlertRule = {
  id: string; kind: AlertRuleDto['kind']; source_id: string | null; group_id: string | null; threshold: number | null; min_severity: FindingSeverity | null
  window_minutes: number; cooldown_minutes: number
}
/** A rule's subject (a source, a group) with its arrival rate per minute over the rule's window. */
export type Measured = { key: string; type: AlertEventDto['subject']['type']; id: string; label: string; rate: number }
export type AlertState = { subject_key: string; firing: boolean; last_notified: Date | null }
export type NewGroup = { id: string; title: string; sources: string[]; signature: string }
export type NewAlertEvent = {
  ruleId: string; kind: string; state: AlertEventDto['state']; subject: Measured; rate: number | null; threshold: number | null; notify: boolean; text: string
}

/** In the evaluation's transaction: false when another process is evaluating (the lock is held until commit). */
export async function tryLockEvaluation({ sql }: { sql: Sql }): Promise<boolean> {
  const { rows } = await sql.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [EVALUATION_LOCK])
  return rows[0]?.ok ?? false
}

export async function enabledRules({ sql }: { sql: Sql }): Promise<AlertRule[]> {
  const { rows } = await sql.query<AlertRule>(
    `SELECT id::text, kind, source_id::text, group_id::text, threshold_per_minute::float8 AS threshold, min_severity, window_minutes, cooldown_minutes
     FROM alert_rules WHERE enabled ORDER BY alert_rules.id`,
  )
  return rows
}

/** Records that every enabled rule was evaluated at `now` (shown as "checked … ago"; an evaluator that stopped shows). */
export async function markRulesEvaluated({ sql, now }: { sql: Sql; now: Date }): Promise<void> {
  await sql.query('UPDATE alert_rules SET evaluated_at = $1 WHERE enabled', [now])
}

/** Arrivals per minute of each DLQ source (or the rule's one), by failure time, over the rule's window. */
export async function sourceRates({ sql, rule, now }: { sql: Sql; rule: AlertRule; now: Date }): Promise<Measured[]> {
  const { rows } = await sql.query<{ id: string; queue: string; n: number }>(
    `SELECT s.id::text, s.queue, (SELECT count(*) FROM dead_letters d WHERE d.source_id = s.id AND d.failed_at > $1 AND d.failed_at <= $2)::int AS n
     FROM sources s WHERE s.kind IN ('dlq', 'jetstream') AND ($3::bigint IS NULL OR s.id = $3::bigint)`,
    [new Date(now.getTime() - rule.window_minutes * 60_000), now, rule.source_id],
  )
  return rows.map((r) => ({ key: `source:${r.id}`, type: 'source', id: r.id, label: r.queue, rate: r.n / rule.window_minutes }))
}

/** Arrivals per minute of each group (or the rule's one) seen inside the window or already firing, over the window. */
export async function groupRates({ sql, rule, now }: { sql: Sql; rule: AlertRule; now: Date }): Promise<Measured[]> {
  const since = new Date(now.getTime() - rule.window_minutes * 60_000)
  // Only groups seen inside the window (or already firing) can be in breach or recover: a short list, each summed
  // from its own arrival buckets.
  const { rows } = await sql.query<{ id: string; title: string; n: number }>(
    `SELECT g.id::text, g.title,
       coalesce((SELECT sum(a.count) FROM group_arrivals a WHERE a.group_id = g.id AND a.minute >= date_trunc('minute', $1::timestamptz) AND a.minute <= $2), 0)::int AS n
     FROM error_groups g
     WHERE g.status <> 'muted' AND g.signature <> 'lazarus:held' AND ($3::bigint IS NULL OR g.id = $3::bigint)
       AND (g.last_seen >= $1 OR EXISTS (SELECT 1 FROM alert_states st WHERE st.rule_id = $4::bigint AND st.subject_key = 'group:' || g.id AND st.firing))`,
    [since, now, rule.group_id, rule.id],
  )
  return rows.map((r) => ({ key: `group:${r.id}`, type: 'group', id: r.id, label: r.title, rate: r.n / rule.window_minutes }))
}

export async function alertStates({ sql, ruleId }: { sql: Sql; ruleId: string }): Promise<AlertState[]> {
  const { rows } = await sql.query<AlertState>('SELECT subject_key, firing, last_notified FROM alert_states WHERE rule_id = $1::bigint', [ruleId])
  return rows
}

/** The subject is in breach from `now`; `notifiedAt` (null: not notified) moves the cool-down's start. */
export async function markFiring({ sql, ruleId, subjectKey, now, notifiedAt }: { sql: Sql; ruleId: string; subjectKey: string; now: Date; notifiedAt: Date | null }): Promise<void> {
  await sql.query(
    `INSERT INTO alert_states (rule_id, subject_key, firing, since, last_notified) VALUES ($1::bigint, $2, true, $3, $4)
     ON CONFLICT (rule_id, subject_key) DO UPDATE SET firing = true, since = excluded.since, last_notified = coalesce(excluded.last_notified, alert_states.last_notified)`,
    [ruleId, subjectKey, now, notifiedAt],
  )
}

export async function markRecovered({ sql, ruleId, subjectKey, now }: { sql: Sql; ruleId: string; subjectKey: string; now: Date }): Promise<void> {
  await sql.query('UPDATE alert_states SET firing = false, since = $3 WHERE rule_id = $1::bigint AND subject_key = $2', [ruleId, subjectKey, now])
}

/** The groups created since the last evaluation (at most 500), moving the cursor past them; locks the cursor until commit. */
export async function takeNewGroups({ sql }: { sql: Sql }): Promise<NewGroup[]> {
  const { rows: cursor } = await sql.query<{ last: string }>('SELECT last_group_id::text AS last FROM alert_cursor WHERE id = 1 FOR UPDATE')
  const last = cursor[0]?.last ?? '0'
  // In id order, the bigint's: `ORDER BY id` would sort by the text column of that name ('10' before '9'), and the
  // cursor would move to the wrong group, taking some twice and skipping others.
  const { rows: groups } = await sql.query<NewGroup>(`SELECT id::text, title, sources, signature FROM error_groups WHERE id > $1::bigint ORDER BY error_groups.id LIMIT 500`, [last])
  if (groups.length === 0) return []
  await sql.query(
    `INSERT INTO alert_cursor (id, last_group_id) VALUES (1, $1::bigint) ON CONFLICT (id) DO UPDATE SET last_group_id = excluded.last_group_id`,
    [groups[groups.length - 1].id],
  )
  return groups
}

export type NewHalt = { id: string; job_id: string; stage: number; reason: 'share' | 'new-group'; evidence: { published: number; refailed: number; sharePercent: number; newGroups: { title: string }[] } }

/** Halts of staged replays recorded since the last evaluation (replay_halts), moving the cursor past them. */
export async function takeNewHalts({ sql }: { sql: Sql }): Promise<NewHalt[]> {
  const { rows: cursor } = await sql.query<{ last: string }>('SELECT last_halt_id::text AS last FROM alert_cursor WHERE id = 1 FOR UPDATE')
  const last = cursor[0]?.last ?? '0'
  const { rows } = await sql.query<NewHalt>('SELECT id::text, job_id::text, stage, reason, evidence FROM replay_halts WHERE id > $1::bigint ORDER BY replay_halts.id LIMIT 500', [last])
  if (rows.length === 0) return []
  await sql.query(
    `INSERT INTO alert_cursor (id, last_group_id, last_halt_id) VALUES (1, 0, $1::bigint) ON CONFLICT (id) DO UPDATE SET last_halt_id = excluded.last_halt_id`,
    [rows[rows.length - 1].id],
  )
  return rows
}

/** Records an event; one to notify is due for delivery at once. */
export async function insertAlertEvent({ sql, event, now }: { sql: Sql; event: NewAlertEvent; now: Date }): Promise<AlertEventRow> {
  const { rows } = await sql.query<AlertEventRow>(
    `INSERT INTO alert_events (rule_id, kind, state, subject_type, subject_id, subject_label, rate_per_minute, threshold_per_minute, text, notified, at, next_delivery_at)
     VALUES ($1::bigint, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, CASE WHEN $10 THEN $11::timestamptz END) RETURNING ${ALERT_EVENT_COLUMNS}`,
    [event.ruleId, event.kind, event.state, event.subject.type, event.subject.id, event.subject.label, event.rate, event.threshold, event.text, event.notify, now],
  )
  return rows[0]
}

/** Claims up to `limit` events due for delivery: their next attempt moves to `claimUntil`, so no other process sends them meanwhile. */
export async function claimDueEvents({ sql, now, claimUntil, limit }: { sql: Sql; now: Date; claimUntil: Date; limit: number }): Promise<(AlertEventRow & { delivery_attempts: number })[]> {
  const { rows } = await sql.query<AlertEventRow & { delivery_attempts: number }>(
    `UPDATE alert_events e SET next_delivery_at = $2::timestamptz
     WHERE e.id IN (SELECT id FROM alert_events WHERE next_delivery_at <= $1::timestamptz ORDER BY next_delivery_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING ${alertEventColumns('e')}, e.delivery_attempts`,
    [now, claimUntil, limit],
  )
  return rows
}

export type EnabledWebhook = { id: string; url: string; format: WebhookFormat; routing_key: string | null }

export async function enabledWebhooks({ sql }: { sql: Sql }): Promise<EnabledWebhook[]> {
  // Capped here too: a database from before the cap may hold more, and each one multiplies every alert and its retries.
  const { rows } = await sql.query<EnabledWebhook>(`SELECT id::text, url, format, routing_key FROM alert_webhooks WHERE enabled ORDER BY id LIMIT ${MAX_WEBHOOKS}`)
  return rows
}

/**
 * Takes one of a webhook's `max` POSTs of `now`'s clock minute; false when they are all taken. Counted in the
 * database, so every process shares the cap (the row lock of the upsert orders concurrent takers).
 */
export async function takeWebhookPost({ sql, webhookId, now, max }: { sql: Sql; webhookId: string; now: Date; max: number }): Promise<boolean> {
  const { rows } = await sql.query(
    `INSERT INTO alert_webhook_sends (webhook_id, minute, posts) VALUES ($1::bigint, date_trunc('minute', $2::timestamptz), 1)
     ON CONFLICT (webhook_id, minute) DO UPDATE SET posts = alert_webhook_sends.posts + 1 WHERE alert_webhook_sends.posts < $3
     RETURNING posts`,
    [webhookId, now, max],
  )
  return rows.length > 0
}

/** Forgets the counts of minutes long past. */
export async function pruneWebhookPosts({ sql, now }: { sql: Sql; now: Date }): Promise<void> {
  await sql.query(`DELETE FROM alert_webhook_sends WHERE minute < $1::timestamptz - interval '1 hour'`, [now])
}

/** How many messages each group holds and its top stack frames, for the chat and paging formats. */
export async function groupFacts({ sql, ids }: { sql: Sql; ids: string[] }): Promise<Map<string, { count: number; topFrames: string[] }>> {
  if (ids.length === 0) return new Map()
  const { rows } = await sql.query<{ id: string; count: number; top_frames: string[] }>(
    'SELECT id::text, count::float8 AS count, top_frames FROM error_groups WHERE id = ANY($1::bigint[])',
    [ids],
  )
  return new Map(rows.map((r) => [r.id, { count: r.count, topFrames: r.top_frames }]))
}

/** The group of each rule that is about one group (PagerDuty's dedup key names it). */
export async function ruleGroups({ sql, ruleIds }: { sql: Sql; ruleIds: string[] }): Promise<Map<string, string>> {
  if (ruleIds.length === 0) return new Map()
  const { rows } = await sql.query<{ id: string; group_id: string }>('SELECT id::text, group_id::text FROM alert_rules WHERE id = ANY($1::bigint[]) AND group_id IS NOT NULL', [ruleIds])
  return new Map(rows.map((r) => [r.id, r.group_id]))
}

/**
 * Records a rule's firing at `now`; a notified one opens the rule's incident unless one is open. The resolution
 * (takeQuietIncidents) waits for the rule's window after the latest firing.
 */
export async function markRuleFired({ sql, ruleId, now, notified }: { sql: Sql; ruleId: string; now: Date; notified: boolean }): Promise<void> {
  await sql.query(
    `UPDATE alert_rules SET last_fired_at = $2, incident_opened_at = CASE WHEN $3 THEN coalesce(incident_opened_at, $2) ELSE incident_opened_at END WHERE id = $1::bigint`,
    [ruleId, now, notified],
  )
}

export type QuietRule = {
  id: string; kind: AlertRuleDto['kind']; window_minutes: number; threshold: number | null; min_severity: FindingSeverity | null
  queue: string | null; group_id: string | null; title: string | null; opened_at: Date
}

/**
 * Closes the incident of every rule that has one open, has no subject in breach and has not fired for its window,
 * returning those rules. The close is the UPDATE itself (`incident_opened_at` set → NULL), in the evaluation's
 * transaction: a rule resolves once, whichever process or evaluation sees it quiet first. Disabled rules resolve
 * too (disabling clears their breach states); a deleted rule's incident goes with it.
 */
export async function takeQuietIncidents({ sql, now }: { sql: Sql; now: Date }): Promise<QuietRule[]> {
  const { rows } = await sql.query<QuietRule>(
    `WITH quiet AS (
       SELECT r.id, r.incident_opened_at FROM alert_rules r
       WHERE r.incident_opened_at IS NOT NULL
         AND coalesce(r.last_fired_at, r.incident_opened_at) <= $1::timestamptz - make_interval(mins => r.window_minutes)
         AND NOT EXISTS (SELECT 1 FROM alert_states st WHERE st.rule_id = r.id AND st.firing)
       ORDER BY r.id FOR UPDATE OF r
     ), closed AS (
       UPDATE alert_rules r SET incident_opened_at = NULL FROM quiet WHERE r.id = quiet.id
       RETURNING r.id, r.kind, r.window_minutes, r.threshold_per_minute, r.min_severity, r.source_id, r.group_id, quiet.incident_opened_at AS opened_at
     )
     SELECT c.id::text, c.kind, c.window_minutes, c.threshold_per_minute::float8 AS threshold, c.min_severity, s.queue, c.group_id::text, g.title, c.opened_at
     FROM closed c LEFT JOIN sources s ON s.id = c.source_id LEFT JOIN error_groups g ON g.id = c.group_id ORDER BY c.id`,
    [now],
  )
  return rows
}

/** Records an event's deliveries so far; `next` null: nothing left to retry. */
export async function recordDelivery({ sql, eventId, delivery, attempts, next }: { sql: Sql; eventId: string; delivery: AlertEventDto['delivery']; attempts: number; next: Date | null }): Promise<void> {
  await sql.query('UPDATE alert_events SET delivery = $2::jsonb, delivery_attempts = $3, next_delivery_at = $4 WHERE id = $1::bigint', [eventId, JSON.stringify(delivery), attempts, next])
}
