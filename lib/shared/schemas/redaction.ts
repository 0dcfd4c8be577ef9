import { z } from 'zod'
import { text } from './fields'

/**
 * Value detectors Lazarus ships; a rule of kind `detector` switches one on by name. Each finds its kind of value in
 * any text (bodies, headers, error messages, stacks, properties) wherever it sits.
 */
export const REDACTION_DETECTORS = ['email', 'card-number', 'jwt', 'bearer-token', 'url-password', 'private-key', 'service-token'] as const
export type RedactionDetector = (typeof REDACTION_DETECTORS)[number]

export const REDACTION_RULE_KINDS = ['key', 'detector', 'pattern'] as const
export type RedactionRuleKind = (typeof REDACTION_RULE_KINDS)[number]

export const MAX_REDACTION_RULES = 200
export const MAX_PATTERN_LENGTH = 300

/**
 * A rule as the API and the database hold it:
 * - `key`: a key name, `*` matching any run of characters; compared case-insensitively with `-`, `_`, `.` and spaces
 *   ignored, so `*apikey*` also covers `X-Api-Key` and `api_key`. The whole value under a matching key is replaced,
 *   at any depth of JSON bodies, properties and headers, and in `key=value` / `key: value` / `<key>value</key>` text.
 * - `detector`: one of REDACTION_DETECTORS.
 * - `pattern`: a regular expression in RE2 syntax (JavaScript's, minus backreferences and lookaround), matched
 *   case-insensitively in linear time; every match is replaced.
 */
export const redactionRuleInputSchema = z
  .object({
    kind: z.enum(REDACTION_RULE_KINDS),
    value: text().trim().min(1, 'must not be empty').max(MAX_PATTERN_LENGTH),
    enabled: z.boolean().default(true),
    description: text().trim().max(500).nullish(),
  })
  .strict()
export type RedactionRuleInput = z.input<typeof redactionRuleInputSchema>
export type RedactionRuleParsed = z.infer<typeof redactionRuleInputSchema>

/** Key names compare case-insensitively with separators ignored: `X-Api-Key`, `api_key` and `apiKey` are one name. */
export const normalizeKey = (key: string) => key.toLowerCase().replace(/[-_.\s]+/g, '')

/** The literal parts of a key glob (normalised): a key can match only if it contains each of them. */
export const globFragments = (glob: string) => normalizeKey(glob).split('*').filter(Boolean)

/**
 * Why a key or detector rule is malformed, or null. What a pattern makes of RE2 (whether it compiles, whether it
 * matches the empty string) is asked on the server, where RE2 runs (lib/server/redaction/redaction-rules.ts).
 */
export function redactionRuleProblem(rule: RedactionRuleParsed): string | null {
  if (rule.kind === 'key') return globFragments(rule.value).length === 0 ? 'a key rule needs at least one letter or digit besides *' : null
  if (rule.kind === 'detector') {
    return (REDACTION_DETECTORS as readonly string[]).includes(rule.value) ? null : `unknown detector; one of ${REDACTION_DETECTORS.join(', ')}`
  }
  return null
}

const ruleList = z.array(redactionRuleInputSchema).max(MAX_REDACTION_RULES)

function addRuleProblems(rules: readonly RedactionRuleParsed[], ctx: z.RefinementCtx, { duplicates }: { duplicates: boolean }): void {
  const seen = new Map<string, number>()
  rules.forEach((rule, index) => {
    const problem = redactionRuleProblem(rule)
    if (problem) ctx.addIssue({ code: 'custom', path: ['rules', index, 'value'], message: problem })
    if (!duplicates) return
    const identity = `${rule.kind}:${rule.kind === 'key' ? normalizeKey(rule.value) : rule.value}`
    const first = seen.get(identity)
    if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['rules', index, 'value'], message: `duplicates rule ${first + 1}` })
    else seen.set(identity, index)
  })
}

/** PUT /api/settings/redaction: the whole rule set, replacing the stored one. */
export const updateRedactionSchema = z
  .object({ rules: ruleList })
  .strict()
  .superRefine((input, ctx) => addRuleProblems(input.rules, ctx, { duplicates: true }))
export type UpdateRedactionInput = z.infer<typeof updateRedactionSchema>

/** POST /api/settings/redaction/preview: what the rules (the stored ones, or `rules` if given) make of `sample`. */
export const redactionPreviewSchema = z
  .object({
    sample: z.string().max(65_536),
    /** Unsaved rules to try; the stored ones when absent. */
    rules: ruleList.optional(),
  })
  .strict()
  .superRefine((input, ctx) => {
    if (input.rules) addRuleProblems(input.rules, ctx, { duplicates: false })
  })
export type RedactionPreviewInput = z.infer<typeof redactionPreviewSchema>

export type RedactionRuleDto = { id: string; kind: RedactionRuleKind; value: string; enabled: boolean; description: string | null }

export type RedactionDetectorDto = { name: RedactionDetector; label: string; description: string; example: string }

/** GET /api/settings/redaction (and the answer to PUT). */
export type RedactionSettingsDto = {
  rules: RedactionRuleDto[]
  detectors: RedactionDetectorDto[]
  updatedAt: string | null
  updatedBy: string | null
}

/** The answer to POST /api/settings/redaction/preview. */
export type RedactionPreviewDto = { redacted: string; changed: boolean }
