import { ROLES } from '@/lib/shared/roles'
import { REPLAY_JOB_STATUSES } from '@/lib/shared/replay-job-machine'
import { ALERT_EVENT_STATES, ALERT_KINDS, WEBHOOK_FORMATS } from '@/lib/shared/schemas/alert'
import { REDACTION_RULE_KINDS } from '@/lib/shared/schemas/redaction'
import { FINDING_SEVERITIES } from '@/lib/shared/schemas/topology'

/**
 * The CHECK constraints the migrations create, which schema.prisma has no words for. tests/integration/prisma-schema-
 * drift.test.ts compares this list with pg_constraint of a freshly migrated database, both ways and by name: a CHECK
 * the migrations create that is not here fails, as does one listed here that they do not create, or one whose
 * condition differs. So a migration that adds, drops or changes a CHECK updates this file in the same change.
 *
 * Why a list beside the schema rather than anything read from it: Prisma cannot declare a CHECK, so the schema holds
 * nothing to compare, and the migrations (the record, docs/ARCHITECTURE.md#how-code-gets-the-database) hold the
 * other side. Where the allowed values are a TypeScript list the code validates with (the replay job's statuses, the
 * roles, …), the entry is that list, compared as a set: the database and the code cannot come to allow different
 * values. Every other condition is PostgreSQL's own text of it (pg_get_constraintdef), compared exactly.
 */
export type CheckConstraint =
  /** `column IN (…)`: the values, whatever their order, and where the code keeps them. */
  | { table: string; column: string; oneOf: readonly string[]; source: string }
  | { table: string; check: string }

const inList = (table: string, column: string, oneOf: readonly string[], source = 'prisma/check-constraints.ts'): CheckConstraint => ({ table, column, oneOf, source })
const singleRow = (table: string): CheckConstraint => ({ table, check: 'CHECK ((id = 1))' })

export const CHECK_CONSTRAINTS: Record<string, CheckConstraint> = {
  sources_kind_check: inList('sources', 'kind', ['dlq', 'hold', 'jetstream']),
  sources_jetstream_check: { table: 'sources', check: "CHECK ((((kind = 'jetstream'::text) = (stream IS NOT NULL)) AND ((consumer IS NULL) OR (kind = 'jetstream'::text))))" },
  sources_remove_after_capture_check: { table: 'sources', check: "CHECK (((NOT remove_after_capture) OR (kind = 'jetstream'::text)))" },
  replay_jobs_kind_check: inList('replay_jobs', 'kind', ['replay', 'release']),
  replay_jobs_status_check: inList('replay_jobs', 'status', REPLAY_JOB_STATUSES, 'REPLAY_JOB_STATUSES (lib/shared/replay-job-machine.ts)'),
  replay_jobs_rate_per_second_check: { table: 'replay_jobs', check: 'CHECK ((rate_per_second > 0))' },
  replay_items_kind_check: inList('replay_items', 'kind', ['replay', 'release']),
  replay_halts_reason_check: inList('replay_halts', 'reason', ['share', 'new-group']),
  replay_halts_outcome_check: inList('replay_halts', 'outcome', ['resumed', 'cancelled', 'timed-out']),
  pauses_status_check: inList('pauses', 'status', ['active', 'releasing', 'resumed']),
  search_backlog_check: { table: 'search_backlog', check: 'CHECK ((first_id <= last_id))' },
  message_revisions_revision_check: { table: 'message_revisions', check: 'CHECK ((revision >= 1))' },
  redaction_rules_kind_check: inList('redaction_rules', 'kind', REDACTION_RULE_KINDS, 'REDACTION_RULE_KINDS (lib/shared/schemas/redaction.ts)'),
  redaction_rules_value_check: { table: 'redaction_rules', check: 'CHECK (((length(value) >= 1) AND (length(value) <= 300)))' },
  alert_rules_kind_check: inList('alert_rules', 'kind', ALERT_KINDS, 'ALERT_KINDS (lib/shared/schemas/alert.ts)'),
  alert_rules_check: {
    table: 'alert_rules',
    check: "CHECK (((kind = ANY (ARRAY['new-group'::text, 'new-finding'::text, 'replay-halted'::text])) = (threshold_per_minute IS NULL)))",
  },
  alert_rules_new_finding_check: { table: 'alert_rules', check: "CHECK (((kind = 'new-finding'::text) = (min_severity IS NOT NULL)))" },
  alert_rules_min_severity_check: inList('alert_rules', 'min_severity', FINDING_SEVERITIES, 'FINDING_SEVERITIES (lib/shared/schemas/topology.ts)'),
  alert_rules_window_minutes_check: { table: 'alert_rules', check: 'CHECK (((window_minutes >= 1) AND (window_minutes <= 1440)))' },
  alert_rules_cooldown_minutes_check: { table: 'alert_rules', check: 'CHECK (((cooldown_minutes >= 0) AND (cooldown_minutes <= 10080)))' },
  alert_events_state_check: inList('alert_events', 'state', ALERT_EVENT_STATES, 'ALERT_EVENT_STATES (lib/shared/schemas/alert.ts)'),
  alert_webhooks_format_check: inList('alert_webhooks', 'format', WEBHOOK_FORMATS, 'WEBHOOK_FORMATS (lib/shared/schemas/alert.ts)'),
  alert_webhooks_routing_key_check: { table: 'alert_webhooks', check: "CHECK (((format = 'pagerduty'::text) = (routing_key IS NOT NULL)))" },
  alert_cursor_id_check: singleRow('alert_cursor'),
  users_auth_source_check: inList('users', 'auth_source', ['local', 'oidc', 'proxy']),
  role_bindings_role_check: inList('role_bindings', 'role', ROLES, 'ROLES (lib/shared/roles.ts)'),
  role_bindings_origin_check: inList('role_bindings', 'origin', ['manual', 'group']),
  sessions_method_check: inList('sessions', 'method', ['local', 'oidc']),
  api_tokens_role_check: inList('api_tokens', 'role', ROLES, 'ROLES (lib/shared/roles.ts)'),
  api_tokens_scope_check: inList('api_tokens', 'scope', ['metrics', 'guard']),
  api_tokens_role_or_scope: { table: 'api_tokens', check: 'CHECK (((role IS NULL) <> (scope IS NULL)))' },
  api_tokens_guard_queue: { table: 'api_tokens', check: "CHECK (((scope = 'guard'::text) = (guard_queue IS NOT NULL)))" },
  one_time_links_purpose_check: inList('one_time_links', 'purpose', ['setup', 'set-password']),
  webhook_settings_id_check: singleRow('webhook_settings'),
  replay_target_settings_id_check: singleRow('replay_target_settings'),
  replay_confirm_settings_id_check: singleRow('replay_confirm_settings'),
  trace_settings_id_check: singleRow('trace_settings'),
  replay_confirm_settings_large_job_messages_check: { table: 'replay_confirm_settings', check: 'CHECK ((large_job_messages >= 1))' },
  replay_confirm_settings_staged_from_messages_check: { table: 'replay_confirm_settings', check: 'CHECK ((staged_from_messages > 0))' },
  replay_approval_settings_id_check: singleRow('replay_approval_settings'),
  topology_findings_severity_check: inList('topology_findings', 'severity', FINDING_SEVERITIES, 'FINDING_SEVERITIES (lib/shared/schemas/topology.ts)'),
  topology_findings_check: {
    table: 'topology_findings',
    check: 'CHECK ((((acknowledged_at IS NULL) = (acknowledged_by IS NULL)) AND ((acknowledged_at IS NULL) = (acknowledge_reason IS NULL))))',
  },
}
