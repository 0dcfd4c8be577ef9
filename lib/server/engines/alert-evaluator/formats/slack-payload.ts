import 'server-only'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import { plainAlertText, subjectPath, type AlertNotification } from './alert-notification'

/** Alerts shown one by one; the rest are counted ("and 480 more groups"). Keeps a message far under 50 blocks. */
const SLACK_SHOWN_ALERTS = 10
const SECTION_TEXT_MAX = 3000
const HEADER_TEXT_MAX = 150
const FALLBACK_TEXT_MAX = 3000

/** Slack's mrkdwn controls: `&`, `<` and `>` are escaped so a group's title can neither link nor mention (@channel). */
const escapeMrkdwn = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`)

function alertSection(alert: AlertEventDto, notification: AlertNotification): object {
  const label = escapeMrkdwn(alert.subject.label)
  const title = notification.publicUrl ? `*<${notification.publicUrl}${subjectPath(alert.subject)}|${label.replace(/\|/g, '¦')}>*` : `*${label}*`
  const facts: string[] = []
  if (alert.ratePerMinute !== null) facts.push(`${alert.ratePerMinute}/min (threshold ${alert.thresholdPerMinute}/min)`)
  const group = alert.subject.type === 'group' && alert.subject.id ? notification.groups.get(alert.subject.id) : undefined
  if (group) facts.push(`${group.count.toLocaleString('en')} messages`)
  const lines = [title, facts.length > 0 ? facts.join(' · ') : escapeMrkdwn(plainAlertText(alert.text))]
  // Stack frames as code: mrkdwn inside a code span is not interpreted, but its `&<>` still are.
  if (group && group.topFrames.length > 0) lines.push(`\`\`\`${group.topFrames.slice(0, 3).map((f) => escapeMrkdwn(clip(f, 200)).replace(/`/g, 'ˋ')).join('\n')}\`\`\``)
  return { type: 'section', text: { type: 'mrkdwn', text: clip(lines.join('\n'), SECTION_TEXT_MAX) } }
}

function noun(notification: AlertNotification, n: number): string {
  const kind = notification.alerts[0]?.subject.type
  const word = kind === 'group' ? 'group' : kind === 'source' ? 'source' : kind === 'finding' ? 'finding' : kind === 'replay' ? 'replay' : 'alert'
  return `${n} more ${word}${n === 1 ? '' : 's'}`
}

/**
 * A Slack incoming-webhook message (Block Kit): a header, the digest's heading, one section per alert (at most
 * SLACK_SHOWN_ALERTS, "and N more groups" after them) with counts and top frames, and buttons back to Lazarus when
 * LAZARUS_PUBLIC_URL is set. `text` is the plain fallback notifications and old clients show.
 */
export function slackPayload(notification: AlertNotification): object {
  const resolved = notification.state === 'resolved'
  const blocks: object[] = [
    { type: 'header', text: { type: 'plain_text', text: clip(resolved ? '✅ Resolved: Lazarus alert' : `🔴 Lazarus alert: ${notification.alerts.length === 1 ? 'dead letters' : `${notification.alerts.length} alerts`}`, HEADER_TEXT_MAX), emoji: true } },
    { type: 'section', text: { type: 'mrkdwn', text: clip(escapeMrkdwn(notification.heading), SECTION_TEXT_MAX) } },
  ]
  if (!resolved) {
    const shown = notification.alerts.slice(0, SLACK_SHOWN_ALERTS)
    if (notification.alerts.length > 1 || shown.some((a) => a.subject.type === 'group')) blocks.push(...shown.map((a) => alertSection(a, notification)))
    const more = notification.alerts.length - shown.length
    if (more > 0) blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `and ${noun(notification, more)}` }] })
  }
  if (notification.publicUrl) {
    const single = notification.alerts.length === 1 && !resolved ? notification.alerts[0] : null
    const buttons = [
      ...(single ? [{ type: 'button', text: { type: 'plain_text', text: 'Open in Lazarus' }, url: `${notification.publicUrl}${subjectPath(single.subject)}`, style: 'primary' }] : []),
      { type: 'button', text: { type: 'plain_text', text: 'Alert history' }, url: `${notification.publicUrl}/alerts` },
    ]
    blocks.push({ type: 'actions', elements: buttons })
  }
  return { text: clip(escapeMrkdwn(plainAlertText(notification.text)), FALLBACK_TEXT_MAX), blocks }
}
