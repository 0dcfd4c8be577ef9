import 'server-only'
import { subjectPath, type AlertNotification } from './alert-notification'

const SUMMARY_MAX = 1024
const DETAILS_SHOWN = 20

/** PagerDuty's severities: a storm or a halted replay needs someone now; a new group or finding is a warning. */
const SEVERITY: Record<string, 'critical' | 'error' | 'warning' | 'info'> = {
  'source-rate': 'error',
  'group-rate': 'error',
  'replay-halted': 'error',
  'new-group': 'warning',
  'new-finding': 'warning',
}

/**
 * A PagerDuty Events API v2 event. A firing triggers (or adds to) the incident of the rule's dedup key; the rule's
 * resolution resolves it, so the page closes itself. `routingKey` is the webhook's integration key.
 */
export function pagerDutyPayload(notification: AlertNotification, routingKey: string): object {
  if (notification.state === 'resolved') return { routing_key: routingKey, event_action: 'resolve', dedup_key: notification.dedupKey }
  const summary = notification.heading.length <= SUMMARY_MAX ? notification.heading : `${notification.heading.slice(0, SUMMARY_MAX - 1)}…`
  const shown = notification.alerts.slice(0, DETAILS_SHOWN)
  return {
    routing_key: routingKey,
    event_action: 'trigger',
    dedup_key: notification.dedupKey,
    payload: {
      summary,
      source: notification.publicUrl ? new URL(notification.publicUrl).host : 'lazarus',
      severity: SEVERITY[notification.kind] ?? 'error',
      timestamp: notification.at,
      component: 'lazarus',
      group: notification.kind,
      class: notification.kind,
      custom_details: {
        alerts: shown.map((a) => ({
          subject: a.subject.label,
          ratePerMinute: a.ratePerMinute,
          thresholdPerMinute: a.thresholdPerMinute,
          ...(a.subject.type === 'group' && a.subject.id && notification.groups.has(a.subject.id) ? notification.groups.get(a.subject.id) : {}),
        })),
        more: notification.alerts.length - shown.length,
      },
    },
    client: 'Lazarus',
    ...(notification.publicUrl
      ? {
          client_url: `${notification.publicUrl}/alerts`,
          links: [
            ...(notification.alerts.length === 1 ? [{ href: `${notification.publicUrl}${subjectPath(notification.alerts[0].subject)}`, text: 'Open in Lazarus' }] : []),
            { href: `${notification.publicUrl}/alerts`, text: 'Lazarus alert history' },
          ],
        }
      : {}),
  }
}
