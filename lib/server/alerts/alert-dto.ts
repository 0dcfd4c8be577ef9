import 'server-only'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'

export type AlertEventRow = {
  id: string; rule_id: string | null; kind: string; state: AlertEventDto['state']; subject_type: AlertEventDto['subject']['type']; subject_id: string | null
  subject_label: string; rate_per_minute: string | number | null; threshold_per_minute: string | number | null; text: string; notified: boolean
  delivery: AlertEventDto['delivery']; at: Date
}

export const alertEventColumns = (alias?: string) => {
  const a = alias ? `${alias}.` : ''
  return `${a}id::text AS id, ${a}rule_id::text AS rule_id, ${a}kind, ${a}state, ${a}subject_type, ${a}subject_id, ${a}subject_label, ${a}rate_per_minute, ${a}threshold_per_minute, ${a}text, ${a}notified, ${a}delivery, ${a}at`
}
export const ALERT_EVENT_COLUMNS = alertEventColumns()

export function toAlertEventDto(row: AlertEventRow): AlertEventDto {
  return {
    id: row.id,
    ruleId: row.rule_id,
    kind: row.kind,
    state: row.state,
    subject: { type: row.subject_type, id: row.subject_id, label: row.subject_label },
    ratePerMinute: row.rate_per_minute === null ? null : Number(row.rate_per_minute),
    thresholdPerMinute: row.threshold_per_minute === null ? null : Number(row.threshold_per_minute),
    text: row.text,
    notified: row.notified,
    delivery: row.delivery ?? [],
    at: new Date(row.at).toISOString(),
  }
}

/** Who may read why deliveries failed (the alert history and the firing list take it). */
export type DeliveryErrorVisibility = {
  /**
   * Failed deliveries' HTTP status and error ("HTTP 405", "connection failed (ECONNREFUSED)", "refused: …") tell
   * what answers at an address: a port scanner's read-out. Only admins should get them; without this they read as
   * plain failures (`ok: false`, status and error null). Successful deliveries keep their 2xx status.
   */
  includeDeliveryErrors?: boolean
}

export function visibleDelivery(event: AlertEventDto, { includeDeliveryErrors = false }: DeliveryErrorVisibility): AlertEventDto {
  if (includeDeliveryErrors) return event
  return { ...event, delivery: event.delivery.map((d) => ({ ...(d.ok ? d : { ...d, status: null, error: null }), url: webhookOrigin(d.url) })) }
}

/**
 * A webhook URL as non-admins see it: its origin only. The path of a Slack or Teams webhook is the credential that
 * lets anyone post into the channel.
 */
export function webhookOrigin(url: string): string {
  try {
    return `${new URL(url).origin}/…`
  } catch {
    return '…'
  }
}
