import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import { ALERT_EVENT_COLUMNS, toAlertEventDto, type AlertEventRow } from '@/lib/server/alerts/alert-dto'
import { deliverPendingAlerts } from './deliver-pending-alerts'
import { deliverWebhooks } from './deliver-webhooks'

export type EvaluateAlertsOptions = {
  sql: Sql
  now?: Date
  /** Base URL for links in the text (LAZARUS_PUBLIC_URL); without it the text carries no link. */
  publicUrl?: string
  deliver?: typeof deliverWebhooks
}

export type EvaluateAlertsResult = { evaluated: boolean; events: AlertEventDto[] }

type Rule = { id: string; kind: 'source-rate' | 'group-rate' | 'new-group'; source_id: string | null; group_id: string | null; threshold: number | null; window_minutes: number; cooldown_minutes: number }
type Measured = { key: string; type: 'source' | 'group'; id: string; label: string; rate: number }
type Pending = { ruleId: string; kind: string; state: 'firing' | 'recovered'; subject: Measured; threshold: number | null; notify: boolean; text: string }

// Any lock id will do as long as only alerts use it: one evaluator at a time across all processes.
const LOCK = 7_746_001

/**
 * Compares arrival rates with the alert rules, records breaches and recoveries, and notifies the webhooks once per
 * breach: a subject already in breach is not re-notified, and a new breach within the rule's cool-down of the
 * last notification is recorded but not sent. Recoveries are recorded, never sent as alerts. Rates are per minute,
 * averaged over the rule's window, by failure time (so a backlog drained late does not look like a storm).
 */
export async function evaluateAlerts({ sql, now = new Date(), publicUrl, deliver = deliverWebhooks }: EvaluateAlertsOptions): Promise<EvaluateAlertsResult> {
  const stored = await sql.transaction(async (tx) => {
    const { rows: lock } = await tx.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [LOCK])
    if (!lock[0]?.ok) return null
    const { rows: rules } = await tx.query<Rule>(
      `SELECT id::text, kind, source_id::text, group_id::text, threshold_per_minute::float8 AS threshold, window_minutes, cooldown_minutes
       FROM alert_rules WHERE enabled ORDER BY id`,
    )
    const pending: Pending[] = []
    for (const rule of rules) {
      if (rule.kind === 'new-group') continue
      const measured = rule.kind === 'source-rate' ? await sourceRates(tx, rule, now) : await groupRates(tx, rule, now)
      pending.push(...(await transitions(tx, rule, measured, now, publicUrl)))
    }
    pending.push(...(await newGroups(tx, rules.filter((r) => r.kind === 'new-group'), publicUrl)))
    const events: AlertEventRow[] = []
    for (const p of pending) {
      const { rows } = await tx.query<AlertEventRow>(
        `INSERT INTO alert_events (rule_id, kind, state, subject_type, subject_id, subject_label, rate_per_minute, threshold_per_minute, text, notified, at, next_delivery_at)
         VALUES ($1::bigint, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, CASE WHEN $10 THEN $11::timestamptz END) RETURNING ${ALERT_EVENT_COLUMNS}`,
        [p.ruleId, p.kind, p.state, p.subject.type, p.subject.id, p.subject.label, p.kind === 'new-group' ? null : round(p.subject.rate), p.threshold, p.text, p.notify, now],
      )
      events.push(rows[0])
    }
    return events
  })
  if (stored === null) return { evaluated: false, events: [] }

  // Sent after the commit (a webhook that hangs must not hold the evaluation's locks), together with any earlier alert
  // still due: recorded events are delivered at least once, so a crash or a receiver that was down loses nothing.
  const delivered = await deliverPendingAlerts({ sql, now, deliver })
  const events = stored.map((row): AlertEventDto => {
    const dto = toAlertEventDto(row)
    const delivery = delivered.get(row.id)
    return delivery ? { ...dto, delivery } : dto
  })
  return { evaluated: true, events }
}

const round = (n: number) => Math.round(n * 100) / 100

async function sourceRates(tx: Sql, rule: Rule, now: Date): Promise<Measured[]> {
  const { rows } = await tx.query<{ id: string; queue: string; n: number }>(
    `SELECT s.id::text, s.queue, (SELECT count(*) FROM dead_letters d WHERE d.source_id = s.id AND d.failed_at > $1 AND d.failed_at <= $2)::int AS n
     FROM sources s WHERE s.kind = 'dlq' AND ($3::bigint IS NULL OR s.id = $3::bigint)`,
    [new Date(now.getTime() - rule.window_minutes * 60_000), now, rule.source_id],
  )
  return rows.map((r) => ({ key: `source:${r.id}`, type: 'source', id: r.id, label: r.queue, rate: r.n / rule.window_minutes }))
}

async function groupRates(tx: Sql, rule: Rule, now: Date): Promise<Measured[]> {
  const since = new Date(now.getTime() - rule.window_minutes * 60_000)
  // Only groups seen inside the window (or already firing) can be in breach or recover: a short list, each summed
  // from its own arrival buckets.
  const { rows } = await tx.query<{ id: string; title: string; n: number }>(
    `SELECT g.id::text, g.title,
       coalesce((SELECT sum(a.count) FROM group_arrivals a WHERE a.group_id = g.id AND a.minute >= date_trunc('minute', $1::timestamptz) AND a.minute <= $2), 0)::int AS n
     FROM error_groups g
     WHERE g.status <> 'muted' AND g.signature <> 'lazarus:held' AND ($3::bigint IS NULL OR g.id = $3::bigint)
       AND (g.last_seen >= $1 OR EXISTS (SELECT 1 FROM alert_states st WHERE st.rule_id = $4::bigint AND st.subject_key = 'group:' || g.id AND st.firing))`,
    [since, now, rule.group_id, rule.id],
  )
  return rows.map((r) => ({ key: `group:${r.id}`, type: 'group', id: r.id, label: r.title, rate: r.n / rule.window_minutes }))
}

async function transitions(tx: Sql, rule: Rule, measured: Measured[], now: Date, publicUrl?: string): Promise<Pending[]> {
  const { rows: states } = await tx.query<{ subject_key: string; firing: boolean; last_notified: Date | null }>(
    'SELECT subject_key, firing, last_notified FROM alert_states WHERE rule_id = $1::bigint',
    [rule.id],
  )
  const byKey = new Map(states.map((s) => [s.subject_key, s]))
  const pending: Pending[] = []
  for (const subject of measured) {
    const state = byKey.get(subject.key)
    const breach = subject.rate >= (rule.threshold ?? Number.POSITIVE_INFINITY)
    if (breach && !state?.firing) {
      const quiet = !state?.last_notified || now.getTime() - new Date(state.last_notified).getTime() >= rule.cooldown_minutes * 60_000
      await tx.query(
        `INSERT INTO alert_states (rule_id, subject_key, firing, since, last_notified) VALUES ($1::bigint, $2, true, $3, $4)
         ON CONFLICT (rule_id, subject_key) DO UPDATE SET firing = true, since = excluded.since, last_notified = coalesce(excluded.last_notified, alert_states.last_notified)`,
        [rule.id, subject.key, now, quiet ? now : null],
      )
      pending.push({ ruleId: rule.id, kind: rule.kind, state: 'firing', subject, threshold: rule.threshold, notify: quiet, text: breachText(rule, subject, publicUrl) })
    } else if (!breach && state?.firing) {
      await tx.query('UPDATE alert_states SET firing = false, since = $3 WHERE rule_id = $1::bigint AND subject_key = $2', [rule.id, subject.key, now])
      pending.push({
        ruleId: rule.id, kind: rule.kind, state: 'recovered', subject, threshold: rule.threshold, notify: false,
        text: `Recovered: ${subject.type === 'source' ? subject.label : `“${subject.label}”`} is down to ${round(subject.rate)} dead letters/min (threshold ${rule.threshold}/min).`,
      })
    }
  }
  return pending
}

async function newGroups(tx: Sql, rules: Rule[], publicUrl?: string): Promise<Pending[]> {
  const { rows: cursor } = await tx.query<{ last: string }>('SELECT last_group_id::text AS last FROM alert_cursor WHERE id = 1 FOR UPDATE')
  const last = cursor[0]?.last ?? '0'
  const { rows: groups } = await tx.query<{ id: string; title: string; sources: string[]; signature: string }>(
    `SELECT id::text, title, sources, signature FROM error_groups WHERE id > $1::bigint ORDER BY id LIMIT 500`,
    [last],
  )
  if (groups.length === 0) return []
  await tx.query(
    `INSERT INTO alert_cursor (id, last_group_id) VALUES (1, $1::bigint) ON CONFLICT (id) DO UPDATE SET last_group_id = excluded.last_group_id`,
    [groups[groups.length - 1].id],
  )
  const pending: Pending[] = []
  for (const rule of rules) {
    for (const g of groups) {
      if (g.signature === 'lazarus:held') continue
      const subject: Measured = { key: `group:${g.id}`, type: 'group', id: g.id, label: g.title, rate: 0 }
      const where = g.sources.length ? ` in ${g.sources.join(', ')}` : ''
      pending.push({ ruleId: rule.id, kind: rule.kind, state: 'firing', subject, threshold: null, notify: true, text: `New error group${where}: “${g.title}”.${link(publicUrl, `/groups/${g.id}`)}` })
    }
  }
  return pending
}

function breachText(rule: Rule, subject: Measured, publicUrl?: string): string {
  const what = subject.type === 'source' ? `${subject.label} receives` : `“${subject.label}” arrives at`
  const path = subject.type === 'source' ? `/messages?source=${subject.id}` : `/groups/${subject.id}`
  return `Dead letters: ${what} ${round(subject.rate)}/min over the last ${rule.window_minutes} min (threshold ${rule.threshold}/min).${link(publicUrl, path)}`
}

/** Slack's link syntax (`<url|label>`), which other receivers show as plain text. */
function link(publicUrl: string | undefined, path: string): string {
  return publicUrl ? ` <${publicUrl.replace(/\/$/, '')}${path}|Open in Lazarus>` : ''
}
