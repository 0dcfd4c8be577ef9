import 'server-only'
import safeRegex from 'safe-regex2'
import { z } from 'zod'
import { getDb } from '@/lib/server/db'
import type { Sql } from '@/lib/server/db/sql'
import { AppError } from '@/lib/server/errors/app-error'
import {
  MAX_REDACTION_RULES,
  REDACTION_DETECTORS,
  redactionRuleInputSchema,
  type RedactionRuleDto,
  type RedactionRuleKind,
  type RedactionRuleParsed,
  type RedactionSettingsDto,
} from '@/lib/shared/schemas/redaction'
import { DETECTOR_INFO } from './detectors'
import { globFragments, normalizeKey } from './key-matcher'
import { createRedactor, type Redactor } from './redactor'

type RuleRow = { id: string; kind: RedactionRuleKind; value: string; enabled: boolean; description: string | null; updated_at: Date; updated_by: string | null }

const toDto = (row: RuleRow): RedactionRuleDto => ({ id: row.id, kind: row.kind, value: row.value, enabled: row.enabled, description: row.description })

async function readRules(sql: Sql): Promise<RuleRow[]> {
  const { rows } = await sql.query<RuleRow>(
    'SELECT id::text, kind, value, enabled, description, updated_at, updated_by FROM redaction_rules ORDER BY position, id',
  )
  return rows
}

/** The stored rules, compiled. Called once per export or ticket, so an edit applies to the next one. */
export async function loadRedactor(): Promise<Redactor> {
  const { sql } = await getDb()
  return createRedactor(await readRules(sql))
}

export async function getRedactionSettings(): Promise<RedactionSettingsDto> {
  const { sql } = await getDb()
  return settingsOf(await readRules(sql))
}

function settingsOf(rows: RuleRow[]): RedactionSettingsDto {
  const last = rows.reduce<RuleRow | null>((latest, r) => (!latest || r.updated_at > latest.updated_at ? r : latest), null)
  return {
    rules: rows.map(toDto),
    detectors: DETECTOR_INFO,
    updatedAt: last ? new Date(last.updated_at).toISOString() : null,
    updatedBy: last?.updated_by ?? null,
  }
}

/** Why a rule cannot be stored, or null. Patterns must compile, must not match nothing, and must not backtrack catastrophically. */
function ruleProblem(rule: RedactionRuleParsed): string | null {
  if (rule.kind === 'key') {
    if (globFragments(rule.value).length === 0) return 'a key rule needs at least one letter or digit besides *'
    return null
  }
  if (rule.kind === 'detector') {
    return (REDACTION_DETECTORS as readonly string[]).includes(rule.value) ? null : `unknown detector; one of ${REDACTION_DETECTORS.join(', ')}`
  }
  let regex: RegExp
  try {
    regex = new RegExp(rule.value, 'gi')
  } catch (error) {
    return `not a valid regular expression: ${(error as Error).message}`
  }
  if (regex.test('')) return 'the pattern matches an empty string'
  if (!safeRegex(rule.value)) return 'the pattern may backtrack catastrophically (nested or overlapping repetition); simplify it'
  return null
}

/** PUT /api/settings/redaction: the whole rule set, replacing the stored one. */
export const updateRedactionSchema = z
  .object({ rules: z.array(redactionRuleInputSchema).max(MAX_REDACTION_RULES) })
  .strict()
  .superRefine((input, ctx) => {
    const seen = new Map<string, number>()
    input.rules.forEach((rule, index) => {
      const problem = ruleProblem(rule)
      if (problem) ctx.addIssue({ code: 'custom', path: ['rules', index, 'value'], message: problem })
      const identity = `${rule.kind}:${rule.kind === 'key' ? normalizeKey(rule.value) : rule.value}`
      const first = seen.get(identity)
      if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['rules', index, 'value'], message: `duplicates rule ${first + 1}` })
      else seen.set(identity, index)
    })
  })
export type UpdateRedactionInput = z.infer<typeof updateRedactionSchema>

export async function updateRedactionRules(input: UpdateRedactionInput, actor: string): Promise<RedactionSettingsDto> {
  const { sql } = await getDb()
  const rows = await sql.transaction(async (tx) => {
    // One writer at a time; readers keep seeing the previous set until the commit.
    await tx.query('LOCK TABLE redaction_rules IN SHARE ROW EXCLUSIVE MODE')
    await tx.query('DELETE FROM redaction_rules')
    if (input.rules.length > 0) {
      await tx.query(
        `INSERT INTO redaction_rules (kind, value, enabled, description, position, updated_by)
         SELECT kind, value, enabled, description, position, $5 FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[]) WITH ORDINALITY AS r(kind, value, enabled, description, position)`,
        [input.rules.map((r) => r.kind), input.rules.map((r) => r.value), input.rules.map((r) => r.enabled), input.rules.map((r) => r.description || null), actor],
      )
    }
    return readRules(tx)
  })
  return settingsOf(rows)
}

/** POST /api/settings/redaction/preview */
export const redactionPreviewSchema = z
  .object({
    sample: z.string().max(65_536),
    /** Unsaved rules to try; the stored ones when absent. */
    rules: z.array(redactionRuleInputSchema).max(MAX_REDACTION_RULES).optional(),
  })
  .strict()

export async function previewRedaction(input: z.infer<typeof redactionPreviewSchema>): Promise<{ redacted: string; changed: boolean }> {
  if (input.rules) {
    const bad = input.rules.map(ruleProblem).findIndex((p) => p !== null)
    if (bad >= 0) throw new AppError('invalid', `rules.${bad}.value: ${ruleProblem(input.rules[bad])}`)
  }
  const redactor = input.rules ? createRedactor(input.rules) : await loadRedactor()
  const redacted = redactor.text(input.sample)
  return { redacted, changed: redacted !== input.sample }
}
