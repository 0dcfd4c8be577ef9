import 'server-only'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import { plainAlertText, subjectPath, type AlertNotification } from './alert-notification'

/** Alerts shown one by one on a card; the rest are counted. */
const TEAMS_SHOWN_ALERTS = 10

/**
 * Adaptive Card TextBlocks render a Markdown subset (links, emphasis, lists): a group's title must not become a link,
 * emphasis or a list, so the characters that start those are escaped with a backslash (inline anywhere, list markers
 * at a line's start).
 */
const escapeMarkdown = (text: string) =>
  text.replace(/[\\`*_[\]<>]/g, (c) => `\\${c}`).replace(/^(\s*)([-+#]|\d+\.)/gm, (_m, space: string, marker: string) => `${space}\\${marker}`)

function alertContainer(alert: AlertEventDto, notification: AlertNotification): object {
  const facts: { title: string; value: string }[] = []
  if (alert.ratePerMinute !== null) facts.push({ title: 'Rate', value: `${alert.ratePerMinute}/min (threshold ${alert.thresholdPerMinute}/min)` })
  const group = alert.subject.type === 'group' && alert.subject.id ? notification.groups.get(alert.subject.id) : undefined
  if (group) facts.push({ title: 'Messages', value: group.count.toLocaleString('en') })
  const items: object[] = [{ type: 'TextBlock', text: escapeMarkdown(alert.subject.label), weight: 'Bolder', wrap: true }]
  items.push(facts.length > 0 ? { type: 'FactSet', facts: facts.map((f) => ({ title: f.title, value: escapeMarkdown(f.value) })) } : { type: 'TextBlock', text: escapeMarkdown(plainAlertText(alert.text)), wrap: true })
  if (group && group.topFrames.length > 0) {
    items.push({ type: 'TextBlock', text: escapeMarkdown(group.topFrames.slice(0, 3).join('\n')), fontType: 'Monospace', size: 'Small', wrap: true, isSubtle: true })
  }
  return { type: 'Container', separator: true, items, ...(notification.publicUrl ? { selectAction: { type: 'Action.OpenUrl', url: `${notification.publicUrl}${subjectPath(alert.subject)}` } } : {}) }
}

/**
 * A Microsoft Teams message for an incoming webhook or a Workflows "post to a channel when a webhook request is
 * received" flow: the `message` envelope with one Adaptive Card 1.5 attachment.
 */
export function teamsPayload(notification: AlertNotification): object {
  const resolved = notification.state === 'resolved'
  const shown = resolved ? [] : notification.alerts.slice(0, TEAMS_SHOWN_ALERTS)
  const more = resolved ? 0 : notification.alerts.length - shown.length
  const body: object[] = [
    { type: 'TextBlock', text: resolved ? 'Resolved: Lazarus alert' : 'Lazarus alert', weight: 'Bolder', size: 'Medium', color: resolved ? 'Good' : 'Attention', wrap: true },
    { type: 'TextBlock', text: escapeMarkdown(notification.heading), wrap: true },
    ...(notification.alerts.length > 1 || shown.some((a) => a.subject.type === 'group') ? shown.map((a) => alertContainer(a, notification)) : []),
    ...(more > 0 ? [{ type: 'TextBlock', text: `and ${more} more`, isSubtle: true, wrap: true }] : []),
  ]
  const single = notification.alerts.length === 1 && !resolved ? notification.alerts[0] : null
  const actions = notification.publicUrl
    ? [
        ...(single ? [{ type: 'Action.OpenUrl', title: 'Open in Lazarus', url: `${notification.publicUrl}${subjectPath(single.subject)}` }] : []),
        { type: 'Action.OpenUrl', title: 'Alert history', url: `${notification.publicUrl}/alerts` },
      ]
    : []
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: { $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', type: 'AdaptiveCard', version: '1.5', body, ...(actions.length > 0 ? { actions } : {}), msteams: { width: 'Full' } },
      },
    ],
  }
}
