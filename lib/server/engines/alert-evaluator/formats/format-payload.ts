import 'server-only'
import type { WebhookFormat } from '@/lib/shared/schemas/alert'
import type { AlertNotification } from './alert-notification'
import { pagerDutyPayload } from './pagerduty-payload'
import { slackPayload } from './slack-payload'
import { teamsPayload } from './teams-payload'

/** The JSON body one webhook receives for a notification, in its format (docs/ARCHITECTURE.md#alerts). */
export function formatPayload({ notification, format, routingKey }: { notification: AlertNotification; format: WebhookFormat; routingKey: string | null }): string {
  if (format === 'slack') return JSON.stringify(slackPayload(notification))
  if (format === 'teams') return JSON.stringify(teamsPayload(notification))
  if (format === 'pagerduty') return JSON.stringify(pagerDutyPayload(notification, routingKey ?? ''))
  return JSON.stringify({ text: notification.text, alert: notification.alerts[0], alerts: notification.alerts })
}
