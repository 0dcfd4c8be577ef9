import 'server-only'
import type { Redactor } from '@/lib/server/redaction/redactor'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import { toAlertEventDto, type AlertEventRow } from '@/lib/server/alerts/alert-dto'

/** Events a digest's text lists one by one. */
const TEXT_LINES = 20

/**
 * What one webhook POST carries: `{text, alert, alerts}`. A group's title and an alert's text quote error messages
 * (`password=…`, an e-mail address, a token), and a webhook leaves Lazarus like an export does, so both go through
 * the stored redaction rules. The delivery history is left out: it lists the other webhooks' URLs, which are
 * credentials of their own (a Slack webhook URL is enough to post to its channel).
 *
 * One POST per rule and evaluation (docs/ARCHITECTURE.md#alerts): the events one rule raised in one evaluation (a
 * rule over every group can see fifteen groups breach at once) go out as one digest, whose `text` lists each event's
 * own line, link included (the first TEXT_LINES, then "… and N more": a storm of 500 groups stays readable), and whose
 * `alerts` holds them all; `alert` is the first, as a single alert's was.
 */
export function webhookPayload(rows: AlertEventRow[], redactor: Redactor): { text: string; alert: AlertEventDto; alerts: AlertEventDto[] } {
  const alerts = rows.map((row) => {
    const dto = toAlertEventDto(row)
    return redactor.json({ ...dto, subject: { ...dto.subject, label: redactor.text(dto.subject.label) }, text: redactor.text(row.text), delivery: [] })
  })
  const listed = alerts.slice(0, TEXT_LINES).map((a) => `• ${a.text}`)
  const more = alerts.length > TEXT_LINES ? [`… and ${alerts.length - TEXT_LINES} more`] : []
  // Resolutions in one digest are of one rule (one refused earlier, a later one): the rule is resolved, said once.
  const single = alerts.length === 1 || rows[0].state === 'resolved'
  const text = single ? alerts[alerts.length - 1].text : [`${digestHeading(rows[0].kind, alerts.length)}:`, ...listed, ...more].join('\n')
  return { text, alert: alerts[0], alerts }
}

function digestHeading(kind: string, n: number): string {
  if (kind === 'new-group') return `${n} new error groups`
  if (kind === 'new-finding') return `${n} new topology findings`
  if (kind === 'replay-halted') return `${n} replays halted`
  if (kind === 'source-rate') return `${n} sources over one alert rule's threshold`
  return `${n} error groups over one alert rule's threshold`
}
