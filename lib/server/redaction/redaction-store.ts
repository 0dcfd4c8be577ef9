import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { RedactionRuleKind } from '@/lib/shared/schemas/redaction'
import type { RedactionRule } from './redactor'

/**
 * The SQL of the redaction rules. SQL, not Prisma: the rules are read on the caller's connection for every export,
 * ticket, redacted message list and alert delivery (the alert engine's pool has no Prisma client), and replaced as a
 * whole under a table lock.
 */

export type RuleRow = { id: string; kind: RedactionRuleKind; value: string; enabled: boolean; description: string | null; updated_at: Date; updated_by: string | null }

export async function readRedactionRules({ sql }: { sql: Sql }): Promise<RuleRow[]> {
  const { rows } = await sql.query<RuleRow>(
    'SELECT id::text, kind, value, enabled, description, updated_at, updated_by FROM redaction_rules ORDER BY position, id',
  )
  return rows
}

/** Keeps other writers of the rules out until the transaction ends (a self-conflicting lock; readers are not blocked). */
export async function lockRedactionRules({ sql }: { sql: Sql }): Promise<void> {
  await sql.query('LOCK TABLE redaction_rules IN SHARE ROW EXCLUSIVE MODE')
}

/** Replaces every rule with `rules`, in their order; in a transaction that took lockRedactionRules first. */
export async function replaceRedactionRules({ sql, rules, actor }: { sql: Sql; rules: readonly (RedactionRule & { description?: string | null })[]; actor: string }): Promise<void> {
  await sql.query('DELETE FROM redaction_rules')
  if (rules.length === 0) return
  await sql.query(
    `INSERT INTO redaction_rules (kind, value, enabled, description, position, updated_by)
     SELECT kind, value, enabled, description, position, $5 FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[]) WITH ORDINALITY AS r(kind, value, enabled, description, position)`,
    [rules.map((r) => r.kind), rules.map((r) => r.value), rules.map((r) => r.enabled), rules.map((r) => r.description || null), actor],
  )
}
