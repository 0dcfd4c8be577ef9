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

export type RedactionRuleDto = { id: string; kind: RedactionRuleKind; value: string; enabled: boolean; description: string | null }

export type RedactionDetectorDto = { name: RedactionDetector; label: string; description: string; example: string }

/** GET /api/settings/redaction (and the answer to PUT). */
export type RedactionSettingsDto = {
  rules: RedactionRuleDto[]
  detectors: RedactionDetectorDto[]
  updatedAt: string | null
  updatedBy: string | null
}

/** POST /api/settings/redaction/preview: what the rules (the stored ones, or `rules` if given) make of `sample`. */
export type RedactionPreviewDto = { redacted: string; changed: boolean }
