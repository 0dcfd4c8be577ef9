import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import { toAlertEventDto, type AlertEventRow } from '@/lib/server/alerts/alert-dto'
import { takeOpenedFindings } from '@/lib/server/topology/findings-store'
import type { FindingSeverity } from '@/lib/shared/schemas/topology'
import {
  alertStates,
  enabledRules,
  groupRates,
  insertAlertEvent,
  markFiring,
  markRecovered,
  markRuleFired,
  markRulesEvaluated,
  sourceRates,
  takeNewGroups,
  takeNewHalts,
  takeQuietIncidents,
  tryLockEvaluation,
  type AlertRule,
  type Measured,
  type NewAlertEvent,
  type QuietRule,
} from './alert-store'
import { deliverPendingAlerts } from './deliver-pending-alerts'

export type EvaluateAlertsOptions = {
  /** The evaluator uses db.background, the pool without statement timeouts. */
  db: Db
  now?: Date
  /** Base URL for links in the text (LAZARUS_PUBLIC_URL); without it the text carries no link. */
  publicUrl?: string
  /** LAZARUS_WEBHOOK_MAX_PER_MINUTE (default: the configuration's). */
  maxPostsPerMinute?: number
}

export type EvaluateAlertsResult = { evaluated: boolean; events: AlertEventDto[] }

/**
 * Compares arrival rates with the alert rules, records breaches and recoveries, and notifies the webhooks once per
 * breach: a subject already in breach is not re-notified, and a new breach within the rule's cool-down of the
 * last notification is recorded but not sent. A subject's recovery is recorded, not sent. A rule whose notified
 * firing opened an incident resolves once it has had nothing in breach and nothing new for its window: the
 * resolution is recorded and sent to every webhook (PagerDuty: `resolve`), so pages close themselves. Rates are per
 * minute, averaged over the rule's window, by failure time (so a backlog drained late does not look like a storm).
 */
export async function evaluateAlerts({ db, now = new Date(), publicUrl, maxPostsPerMinute }: EvaluateAlertsOptions): Promise<EvaluateAlertsResult> {
  const stored = await db.background.transaction(async (tx) => {
    if (!(await tryLockEvaluation({ sql: tx }))) return null
    const rules = await enabledRules({ sql: tx })
    const pending: NewAlertEvent[] = []
    for (const rule of rules) {
      if (rule.kind === 'new-group' || rule.kind === 'new-finding' || rule.kind === 'replay-halted') continue
      const measured = rule.kind === 'source-rate' ? await sourceRates({ sql: tx, rule, now }) : await groupRates({ sql: tx, rule, now })
      pending.push(...(await transitions({ sql: tx, rule, measured, now, publicUrl })))
    }
    pending.push(...(await newGroups({ sql: tx, rules: rules.filter((r) => r.kind === 'new-group'), publicUrl })))
    pending.push(...(await newFindings({ sql: tx, rules: rules.filter((r) => r.kind === 'new-finding'), publicUrl })))
    pending.push(...(await newHalts({ sql: tx, rules: rules.filter((r) => r.kind === 'replay-halted'), publicUrl })))
    const events: AlertEventRow[] = []
    for (const event of pending) events.push(await insertAlertEvent({ sql: tx, event, now }))
    const fired = new Map<string, boolean>()
    for (const e of events) if (e.state === 'firing' && e.rule_id !== null) fired.set(e.rule_id, (fired.get(e.rule_id) ?? false) || e.notified)
    for (const [ruleId, notified] of fired) await markRuleFired({ sql: tx, ruleId, now, notified })
    // After the firings are recorded: a rule that fired in this evaluation is not quiet.
    for (const rule of await takeQuietIncidents({ sql: tx, now })) events.push(await insertAlertEvent({ sql: tx, event: resolution(rule, publicUrl), now }))
    await markRulesEvaluated({ sql: tx, now })
    return events
  })
  if (stored === null) return { evaluated: false, events: [] }

  // Sent after the commit (a webhook that hangs must not hold the evaluation's locks), together with any earlier alert
  // still due: recorded events are delivered at least once, so a crash or a receiver that was down loses nothing.
  const delivered = await deliverPendingAlerts({ db, now, publicUrl, maxPostsPerMinute })
  const events = stored.map((row): AlertEventDto => {
    const dto = toAlertEventDto(row)
    const delivery = delivered.get(row.id)
    return delivery ? { ...dto, delivery } : dto
  })
  return { evaluated: true, events }
}

const round = (n: number) => Math.round(n * 100) / 100

async function transitions({ sql: tx, rule, measured, now, publicUrl }: { sql: Sql; rule: AlertRule; measured: Measured[]; now: Date; publicUrl?: string }): Promise<NewAlertEvent[]> {
  const states = await alertStates({ sql: tx, ruleId: rule.id })
  const byKey = new Map(states.map((s) => [s.subject_key, s]))
  const pending: NewAlertEvent[] = []
  for (const subject of measured) {
    const state = byKey.get(subject.key)
    const breach = subject.rate >= (rule.threshold ?? Number.POSITIVE_INFINITY)
    if (breach && !state?.firing) {
      const quiet = !state?.last_notified || now.getTime() - new Date(state.last_notified).getTime() >= rule.cooldown_minutes * 60_000
      await markFiring({ sql: tx, ruleId: rule.id, subjectKey: subject.key, now, notifiedAt: quiet ? now : null })
      pending.push({ ruleId: rule.id, kind: rule.kind, state: 'firing', subject, rate: round(subject.rate), threshold: rule.threshold, notify: quiet, text: breachText(rule, subject, publicUrl) })
    } else if (!breach && state?.firing) {
      await markRecovered({ sql: tx, ruleId: rule.id, subjectKey: subject.key, now })
      pending.push({
        ruleId: rule.id, kind: rule.kind, state: 'recovered', subject, rate: round(subject.rate), threshold: rule.threshold, notify: false,
        text: `Recovered: ${subject.type === 'source' ? subject.label : `“${subject.label}”`} is down to ${round(subject.rate)} dead letters/min (threshold ${rule.threshold}/min).`,
      })
    }
  }
  return pending
}

async function newGroups({ sql: tx, rules, publicUrl }: { sql: Sql; rules: AlertRule[]; publicUrl?: string }): Promise<NewAlertEvent[]> {
  const groups = await takeNewGroups({ sql: tx })
  if (groups.length === 0) return []
  const pending: NewAlertEvent[] = []
  for (const rule of rules) {
    for (const g of groups) {
      if (g.signature === 'lazarus:held') continue
      const subject: Measured = { key: `group:${g.id}`, type: 'group', id: g.id, label: g.title, rate: 0 }
      const where = g.sources.length ? ` in ${g.sources.join(', ')}` : ''
      pending.push({ ruleId: rule.id, kind: rule.kind, state: 'firing', subject, rate: null, threshold: null, notify: true, text: `New error group${where}: “${g.title}”.${link(publicUrl, `/groups/${g.id}`)}` })
    }
  }
  return pending
}

const SEVERITY_RANK: Record<FindingSeverity, number> = { info: 0, warning: 1, error: 2 }

/** One alert per finding the doctor opened (or reopened) at a rule's least severity or worse (docs/topology.md#alerts-and-metrics). */
async function newFindings({ sql: tx, rules, publicUrl }: { sql: Sql; rules: AlertRule[]; publicUrl?: string }): Promise<NewAlertEvent[]> {
  // The cursor moves even with no rule, so a rule added later does not fire for every finding of the past.
  const findings = await takeOpenedFindings({ sql: tx })
  const pending: NewAlertEvent[] = []
  for (const rule of rules) {
    for (const f of findings) {
      if (SEVERITY_RANK[f.severity] < SEVERITY_RANK[rule.min_severity ?? 'warning']) continue
      const subject: Measured = { key: `finding:${f.id}`, type: 'finding', id: f.id, label: f.title, rate: 0 }
      // The JetStream findings' vhost is empty (docs/jetstream.md#the-doctors-jetstream-findings): every vhost's page shows them.
      const vhost = f.vhost === '/' || f.vhost === '' ? '' : `&vhost=${encodeURIComponent(f.vhost)}`
      const where = f.vhost === '' ? 'NATS JetStream' : `vhost ${f.vhost}`
      pending.push({ ruleId: rule.id, kind: rule.kind, state: 'firing', subject, rate: null, threshold: null, notify: true, text: `New topology finding (${f.severity}) on ${where}: ${f.title}.${link(publicUrl, `/topology?finding=${f.id}${vhost}`)}` })
    }
  }
  return pending
}

/** One alert per halt of a staged replay (docs/operations.md#staged-replays). */
async function newHalts({ sql: tx, rules, publicUrl }: { sql: Sql; rules: AlertRule[]; publicUrl?: string }): Promise<NewAlertEvent[]> {
  // The cursor moves even with no rule, as for findings.
  const halts = await takeNewHalts({ sql: tx })
  const pending: NewAlertEvent[] = []
  for (const rule of rules) {
    for (const h of halts) {
      const stage = h.stage === 0 ? 'the canary' : `stage ${h.stage + 1}`
      const why = h.reason === 'new-group'
        ? `a replayed copy failed again in a new error group (${h.evidence.newGroups.map((g) => `“${g.title}”`).join(', ')})`
        : `${h.evidence.refailed} of ${h.evidence.published} replayed messages failed again (${h.evidence.sharePercent} %)`
      const subject: Measured = { key: `replay:${h.job_id}`, type: 'replay', id: h.job_id, label: `replay ${h.job_id}`, rate: 0 }
      pending.push({ ruleId: rule.id, kind: rule.kind, state: 'firing', subject, rate: null, threshold: null, notify: true, text: `Replay ${h.job_id} halted in ${stage}: ${why}. Resume or cancel it.${link(publicUrl, `/replays/${h.job_id}`)}` })
    }
  }
  return pending
}

/** What a rule is about, in a sentence's words ("“OrderException” over 5/min", "new error groups"). */
function ruleSubject(rule: QuietRule): string {
  if (rule.kind === 'source-rate') return `dead letters of ${rule.queue ?? 'every source'} over ${rule.threshold}/min`
  if (rule.kind === 'group-rate') return `${rule.title === null ? 'any error group' : `“${rule.title}”`} over ${rule.threshold}/min`
  if (rule.kind === 'new-group') return 'new error groups'
  if (rule.kind === 'new-finding') return `new topology findings (${rule.min_severity ?? 'warning'} or worse)`
  return 'halted staged replays'
}

function resolution(rule: QuietRule, publicUrl?: string): NewAlertEvent {
  const label = ruleSubject(rule)
  return {
    ruleId: rule.id, kind: rule.kind, state: 'resolved', subject: { key: `rule:${rule.id}`, type: 'rule', id: rule.id, label, rate: 0 }, rate: null, threshold: rule.threshold, notify: true,
    text: `Resolved: ${ruleSubject(rule)}: quiet for ${rule.window_minutes} min.${link(publicUrl, '/alerts')}`,
  }
}

function breachText(rule: AlertRule, subject: Measured, publicUrl?: string): string {
  const what = subject.type === 'source' ? `${subject.label} receives` : `“${subject.label}” arrives at`
  const path = subject.type === 'source' ? `/messages?source=${subject.id}` : `/groups/${subject.id}`
  return `Dead letters: ${what} ${round(subject.rate)}/min over the last ${rule.window_minutes} min (threshold ${rule.threshold}/min).${link(publicUrl, path)}`
}

/** Slack's link syntax (`<url|label>`), which other receivers show as plain text. */
function link(publicUrl: string | undefined, path: string): string {
  return publicUrl ? ` <${publicUrl.replace(/\/$/, '')}${path}|Open in Lazarus>` : ''
}
