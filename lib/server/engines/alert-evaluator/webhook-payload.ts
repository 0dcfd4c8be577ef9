import 'server-only'
import type { Redactor } from '@/lib/server/redaction/redactor'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import { toAlertEventDto, type AlertEventRow } from '@/lib/server/alerts/alert-dto'

/**
 * What one alert's webhook POST carries: `{text, alert}`. A group's title and an alert's text quote error messages
 * (`password=…`, an e-mail address, a token), and a webhook leaves Lazarus like an export does, so both go through
 * the stored redaction rules. The delivery history is left out: it lists the other webhooks' URLs, which are
 * credentials of their own (a Slack webhook URL is enough to post to its channel).
 */
export function webhookPayload(row: AlertEventRow, redactor: Redactor): { text: string; alert: AlertEventDto } {
  const text = redactor.text(row.text)
  const dto = toAlertEventDto(row)
  const alert = redactor.json({ ...dto, subject: { ...dto.subject, label: redactor.text(dto.subject.label) }, text, delivery: [] })
  return { text, alert }
}
