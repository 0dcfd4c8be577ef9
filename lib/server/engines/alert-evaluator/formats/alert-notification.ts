import 'server-only'
import type { Redactor } from '@/lib/server/redaction/redactor'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import type { AlertEventRow } from '@/lib/server/alerts/alert-dto'
import { webhookPayload } from '../webhook-payload'

/** What Lazarus knows of a group an alert names: how many messages it holds and its top stack frames. */
export type GroupFacts = { count: number; topFrames: string[] }

/**
 * One notification of one rule, whatever the format: the events it carries (redacted), the text of today's generic
 * payload, and what the chat and paging formats add: the group facts, the links back and PagerDuty's dedup key.
 */
export type AlertNotification = {
  state: 'firing' | 'resolved'
  kind: string
  /** The generic payload's `text`: the one event's text, or a digest heading and one line per event. */
  text: string
  /** The one line a chat message or page opens with, without Slack's link syntax. */
  heading: string
  alerts: AlertEventDto[]
  /** By group id, for the alerts about groups. */
  groups: Map<string, GroupFacts>
  /** LAZARUS_PUBLIC_URL without its trailing slash; null: no links. */
  publicUrl: string | null
  /** Stable per rule, and per group for a rule about one group: PagerDuty's trigger and resolve share it. */
  dedupKey: string
  at: string
}

const SLACK_LINK = /\s*<[^<>|]+\|Open in Lazarus>/g

/** An alert's text without the `<url|Open in Lazarus>` link Slack-compatible receivers turn into a link. */
export const plainAlertText = (text: string) => text.replace(SLACK_LINK, '').trim()

/** Lazarus's page about an alert's subject, relative to the public URL. */
export function subjectPath(subject: AlertEventDto['subject']): string {
  if (subject.type === 'group') return `/groups/${subject.id}`
  if (subject.type === 'source') return `/messages?source=${subject.id}`
  if (subject.type === 'finding') return `/topology?finding=${subject.id}`
  if (subject.type === 'replay') return `/replays/${subject.id}`
  return '/alerts'
}

export type BuildAlertNotificationOptions = {
  rows: AlertEventRow[]
  redactor: Redactor
  groups: Map<string, GroupFacts>
  /** The rule's group, when the rule is about one group (its dedup key names it). */
  ruleGroupId: string | null
  publicUrl?: string
}

/**
 * The notification of one digest: the events of one rule and state that one webhook has not accepted yet. Alert
 * texts, group titles and stack frames quote error messages: they leave redacted, like exports.
 */
export function buildAlertNotification({ rows, redactor, groups, ruleGroupId, publicUrl }: BuildAlertNotificationOptions): AlertNotification {
  const generic = webhookPayload(rows, redactor)
  const first = rows[0]
  const redactedGroups = new Map([...groups].map(([id, g]) => [id, { count: g.count, topFrames: g.topFrames.map((f) => redactor.text(f)) }]))
  const heading = generic.alerts.length === 1 || first.state === 'resolved' ? plainAlertText(generic.text) : generic.text.split('\n')[0].replace(/:$/, '')
  const ruleKey = first.rule_id === null ? `lazarus/alert-event/${first.id}` : `lazarus/alert-rule/${first.rule_id}${ruleGroupId ? `/group/${ruleGroupId}` : ''}`
  return {
    state: first.state === 'resolved' ? 'resolved' : 'firing',
    kind: first.kind,
    text: generic.text,
    heading,
    alerts: generic.alerts,
    groups: redactedGroups,
    publicUrl: publicUrl ? publicUrl.replace(/\/$/, '') : null,
    dedupKey: ruleKey,
    at: new Date(first.at).toISOString(),
  }
}
