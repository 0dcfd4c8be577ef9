import 'server-only'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'

export type AlertEventRow = {
  id: string; rule_id: string | null; kind: string; state: 'firing' | 'recovered'; subject_type: 'source' | 'group'; subject_id: string | null
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
