import 'server-only'
import type { Redactor } from '@/lib/server/redaction/redactor'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import { toAlertEventDto, type AlertEventRow } from '@/lib/server/alerts/alert-dto'

/**
 * What one webhook POST carries: `{text, alert, alerts}`. A group's title and an alert's text quote error messages
 * (`password=…`, an e-mail address, a token), and a webhook leaves Lazarus like an export does, so both go through
 * the stored redaction rules. The delivery history is left out: it lists the other webhooks' URLs, which are
 * credentials of their own (a Slack webhook URL is enough to post to its channel).
 *
 * One POST per rule and evaluation (docs/ARCHITECTURE.md#alerts): the events one rule raised in one evaluation (a
 * rule over every group can see fifteen groups breach at once) go out as one digest, whose `text` lists each event's
 * own line, link included, and whose `alerts` holds them all; `alert` is the first, as a single alert's was.
 */
export function webhookPayload(rows: AlertEventRow[], redactor: Redactor): { text: string; alert: AlertEventDto; alerts: AlertEventDto[] } {
  const alerts = rows.map((row) => {
    const dto = toAlertEventDto(row)
    return redactor.json({ ...dto, subject: { ...dto.subject, label: redactor.text(dto.subject.label) }, text: redactor.text(row.text), delivery: [] })
  })
  const text = alerts.length === 1 ? alerts[0].text : [`${digestHeading(rows[0].kind, alerts.length)}:`, ...alerts.map((a) => `• ${a.text}`)].join('\n')
  return { text, alert: alerts[0], alerts }
}

function digestHeading(kind: string, n: number): string {
  if (kind === 'new-group') return `${n} new error groups`
  if (kind === 'new-finding') return `${n} new topology findings`
  if (kind === 'replay-halted') return `${n} replays halted`
  if (kind === 'source-rate') return `${n} sources over one alert rule's threshold`
  return `${n} error groups over one alert rule's threshold`
}
