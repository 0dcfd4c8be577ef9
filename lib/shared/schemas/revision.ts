import { z } from 'zod'
import { SURROGATE_MESSAGE, text } from './fields'
import { selectionSchema } from './selection'

/**
 * Edit and replay (docs/ARCHITECTURE.md#revisions): an edit of a message is a revision; the stored message never
 * changes. Header values travel in Lazarus' typed form (`{t, v}` or `{t, b64}`, the tags of docs/rabbitmq.md#typed-headers),
 * so each value's AMQP type is kept or chosen explicitly; the server checks them by encoding the table.
 */

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** A body's text: any string UTF-8 can hold exactly (NUL included: bodies are bytes, never SQL text). */
const bodyText = (max: number) =>
  z
    .string()
    .max(max)
    .refine((value) => !LONE_SURROGATE.test(value), SURROGATE_MESSAGE)

/** Upper bound of a body as text here; the real limit (LAZARUS_REPLAY_MAX_BODY_BYTES, on bytes) is checked by the server. */
const MAX_BODY_CHARS = 64 * 1024 * 1024

export const revisionBodySchema = z.discriminatedUnion('kind', [
  /** JSON text, kept as typed (formatting included); must parse. */
  z.object({ kind: z.literal('json'), text: bodyText(MAX_BODY_CHARS) }).strict(),
  z.object({ kind: z.literal('text'), text: bodyText(MAX_BODY_CHARS) }).strict(),
  /** A binary replacement, as base64 (or a multipart upload, which the route turns into this). */
  z.object({ kind: z.literal('base64'), base64: z.string().max(MAX_BODY_CHARS) }).strict(),
])

/** One header, in table order. `value` is a typed value ({t, v} / {t, b64}); the server refuses a wrong one (422). */
export const typedHeaderInputSchema = z.object({ name: text().min(1).max(255), value: z.record(z.string(), z.unknown()) }).strict()
export type TypedHeaderInput = z.infer<typeof typedHeaderInputSchema>

/** The AMQP properties an edit may set (the ones a replay sends, docs/rabbitmq.md#safe-replay); null removes one. */
export const editablePropertiesSchema = z
  .object({
    contentType: text().max(255).nullable(),
    contentEncoding: text().max(255).nullable(),
    correlationId: text().max(255).nullable(),
    replyTo: text().max(255).nullable(),
    messageId: text().max(255).nullable(),
    type: text().max(255).nullable(),
    appId: text().max(255).nullable(),
    deliveryMode: z.union([z.literal(1), z.literal(2)]).nullable(),
    priority: z.number().int().min(0).max(255).nullable(),
    timestamp: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable(),
  })
  .partial()
  .strict()

/** POST /api/messages/{id}/revisions. What is left out stays as in the revision it is based on. */
export const createRevisionSchema = z
  .object({
    body: revisionBodySchema.optional(),
    headers: z.array(typedHeaderInputSchema).max(2000).optional(),
    properties: editablePropertiesSchema.optional(),
    /** The revision the edit started from (0: the original); a newer one meanwhile is a 409. */
    basedOn: z.number().int().min(0).optional(),
  })
  .strict()
export type CreateRevisionInput = z.infer<typeof createRevisionSchema>

/** A JSON Patch operation (RFC 6902); applied by fast-json-patch, which checks each one. */
const jsonPatchOpSchema = z.union([
  z.object({ op: z.enum(['add', 'replace', 'test']), path: z.string().max(1000), value: z.unknown() }).strict(),
  z.object({ op: z.literal('remove'), path: z.string().max(1000) }).strict(),
  z.object({ op: z.enum(['move', 'copy']), from: z.string().max(1000), path: z.string().max(1000) }).strict(),
])

export const bulkEditOperationSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('set-header'), name: text().min(1).max(255), value: z.record(z.string(), z.unknown()) }).strict(),
  z.object({ type: z.literal('remove-header'), name: text().min(1).max(255) }).strict(),
  z.object({ type: z.literal('json-patch'), patch: z.array(jsonPatchOpSchema).min(1).max(200) }).strict(),
])
export type BulkEditOperation = z.infer<typeof bulkEditOperationSchema>

/** POST /api/messages/bulk-edit */
export const bulkEditSchema = z.object({ selection: selectionSchema, operation: bulkEditOperationSchema, preview: z.boolean().default(true) }).strict()
export type BulkEditInput = z.infer<typeof bulkEditSchema>

/** A header's change: before and after in the typed form (absent: not there). */
export type HeaderChangeDto = { name: string; change: 'added' | 'removed' | 'changed'; before?: unknown; after?: unknown }

export type RevisionDiffDto = {
  /** null: the body did not change. `patch`: a unified diff of the text (untrusted, render as text). */
  body: { kind: 'text'; patch: string; added: number; removed: number } | { kind: 'binary'; beforeSize: number; afterSize: number; beforeSha256: string; afterSha256: string } | null
  headers: HeaderChangeDto[]
  properties: { name: string; before: unknown; after: unknown }[]
}

export type RevisionDto = {
  revision: number
  createdBy: string
  createdAt: string
  /** One line: what changed. */
  summary: string
  /** Against the revision before it (the original for revision 1). */
  diff: RevisionDiffDto
  bodySize: number
  bodyEncoding: string
  /** Set when the revision came from a bulk edit. */
  bulkId: string | null
}

/** A revision's whole message, for the editor to start from. Untrusted: render as text. */
export type RevisionContentDto = {
  revision: number
  body: { encoding: string; size: number; base64: string; text: string | null }
  headersTyped: Record<string, unknown>
  properties: Record<string, unknown>
}

export type MessageRevisionsDto = {
  /** Newest first. */
  revisions: RevisionDto[]
  /** The newest revision's content (what a replay created now would send); null when the message was never edited. */
  latest: RevisionContentDto | null
  /** Open replay jobs of this message and the revision each froze (null: the original). */
  pendingReplays: { jobId: string; revision: number | null }[]
}

export type RevisionCreatedDto = { revision: RevisionDto }

export type BulkEditSampleDto = { id: string; diff: RevisionDiffDto }

export type BulkEditResultDto = {
  preview: boolean
  matched: number
  applicable: number
  notApplicable: { reason: string; count: number; sampleIds: string[] }[]
  /** A few messages' diffs (preview), the first five applicable ones. */
  sample: BulkEditSampleDto[]
  /** Revisions written (apply). */
  edited: number
  bulkId: string | null
}
