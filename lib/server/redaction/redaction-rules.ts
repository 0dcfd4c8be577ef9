import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type {
  RedactionPreviewDto,
  RedactionPreviewInput,
  RedactionRuleDto,
  RedactionSettingsDto,
  UpdateRedactionInput,
} from '@/lib/shared/schemas/redaction'
import { DETECTOR_INFO } from './detectors'
import { lockRedactionRules, readRedactionRules, replaceRedactionRules, type RuleRow } from './redaction-store'
import { createRedactor, type RedactionRule, type Redactor } from './redactor'
import { compileUserPattern, matchesEmpty, PatternCompileError } from './user-pattern'

const toDto = (row: RuleRow): RedactionRuleDto => ({ id: row.id, kind: row.kind, value: row.value, enabled: row.enabled, description: row.description })

/**
 * The stored rules, compiled. Called once per export, ticket and alert delivery, so an edit applies to the next one.
 * A stored pattern that does not compile (written into the table by hand, or by a version that accepted it) stops
 * them with 503 rather than letting them go out without the rule.
 */
export async function loadRedactor({ sql }: { sql: Sql }): Promise<Redactor> {
  const rows = await readRedactionRules({ sql })
  try {
    return createRedactor(rows)
  } catch (error) {
    if (!(error instanceof PatternCompileError)) throw error
    const rule = rows.find((r) => r.kind === 'pattern' && r.enabled && r.value === error.source)
    throw new AppError(
      'unavailable',
      `redaction rule ${rule ? `#${rule.id} ` : ''}(pattern ${JSON.stringify(error.source)}) cannot be used: ${error.message}. ` +
        'Exports, tickets and alert webhooks are blocked until it is fixed or removed in the redaction settings.',
      { ruleId: rule?.id ?? null, pattern: error.source },
    )
  }
}

/** A redactor for rules a request brings (PUT, preview): a pattern that does not compile is the request's fault, 422. */
function redactorOf(rules: readonly RedactionRule[]): Redactor {
  assertPatternsCompile(rules)
  return createRedactor(rules)
}

export async function getRedactionSettings({ db }: { db: Db }): Promise<RedactionSettingsDto> {
  return settingsOf(await readRedactionRules({ sql: db.sql }))
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

/**
 * A pattern that compiles must not match the empty string (it would mask between every character): 400, naming the
 * rule, like the schema's own checks (lib/shared/schemas/redaction.ts), which cannot run RE2. Whether a pattern
 * compiles at all is assertPatternsCompile's question (422).
 */
function assertPatternsMatchSomething(rules: readonly Pick<RedactionRule, 'kind' | 'value'>[]): void {
  const issues: { path: (string | number)[]; message: string }[] = []
  rules.forEach((rule, index) => {
    if (rule.kind !== 'pattern') return
    let pattern
    try {
      pattern = compileUserPattern(rule.value)
    } catch {
      return
    }
    if (matchesEmpty(pattern)) issues.push({ path: ['rules', index, 'value'], message: 'the pattern matches an empty string' })
  })
  if (issues.length > 0) throw new AppError('invalid', issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '), issues)
}

/**
 * Patterns run on RE2 (linear time, see user-pattern.ts); one it cannot compile (a backreference, lookaround, bad
 * syntax) is refused with 422, naming the rule, disabled or not: enabling it later would block every export.
 */
function assertPatternsCompile(rules: readonly Pick<RedactionRule, 'kind' | 'value'>[]): void {
  const issues: { path: (string | number)[]; message: string }[] = []
  rules.forEach((rule, index) => {
    if (rule.kind !== 'pattern') return
    try {
      compileUserPattern(rule.value)
    } catch (error) {
      if (!(error instanceof PatternCompileError)) throw error
      issues.push({ path: ['rules', index, 'value'], message: `pattern rule ${index + 1} (${JSON.stringify(rule.value)}): ${error.message}` })
    }
  })
  if (issues.length > 0) throw new AppError('unprocessable', issues.map((i) => i.message).join('; '), issues)
}

export async function updateRedactionRules({ db, input, actor }: { db: Db; input: UpdateRedactionInput; actor: string }): Promise<RedactionSettingsDto> {
  assertPatternsMatchSomething(input.rules)
  assertPatternsCompile(input.rules)
  const rows = await db.sql.transaction(async (tx) => {
    // One writer at a time (the lock is taken before reading what was there); readers see the previous set until the commit.
    await lockRedactionRules({ sql: tx })
    const before = await readRedactionRules({ sql: tx })
    await replaceRedactionRules({ sql: tx, rules: input.rules, actor })
    const after = await readRedactionRules({ sql: tx })
    const view = (rules: typeof after) => rules.map((r) => ({ kind: r.kind, value: r.value, enabled: r.enabled }))
    await recordConfigChange({ sql: tx, actor, action: 'settings.updated', subject: { type: 'settings', id: 'redaction' }, summary: `Changed the redaction rules (${after.length} rules)`, before: view(before), after: view(after) })
    return after
  })
  return settingsOf(rows)
}

export async function previewRedaction({ db, input }: { db: Db; input: RedactionPreviewInput }): Promise<RedactionPreviewDto> {
  if (input.rules) assertPatternsMatchSomething(input.rules)
  const redactor = input.rules ? redactorOf(input.rules) : await loadRedactor({ sql: db.sql })
  const redacted = redactor.text(input.sample)
  return { redacted, changed: redacted !== input.sample }
}
