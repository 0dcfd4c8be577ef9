import { z } from 'zod'
import { idSchema as id } from './fields'
import { withFieldFilters } from './field-filter'
import { messageFilterSchema } from './message-filter'

/**
 * What a replay, a resolve or an export acts on: explicit ids, a whole group, or everything matching a message-list
 * filter. A replay or resolve names it in its JSON body (this schema); an export spells it as query parameters
 * (exportQuerySchema, lib/shared/schemas/export.ts) and becomes one of these. Frozen when a job is created.
 * lib/server/selection/selection-sql.ts turns one into SQL.
 */
/** Only messages stored (ingested) after this time: "N arrived since this replay was planned" (the job's created_at). */
const arrivedAfter = z.iso
  .datetime({ offset: true })
  // Within what PostgreSQL's timestamptz and every stored message can hold.
  .refine((v) => Date.parse(v) >= Date.UTC(1970, 0, 1) && Date.parse(v) < Date.UTC(9999, 0, 1), 'must be between 1970 and 9999')
  .optional()

/**
 * Not the copies of this replay's messages that came back dead (its re-failures, docs/operations.md#staged-replays):
 * those arrived after it was planned too, but they are the job's own messages failing again, not new ones.
 */
const notCopiesOf = id.optional()

export const selectionSchema = z.union([
  z.object({ ids: z.array(id).min(1, 'select at least one message').max(100_000) }).strict(),
  z.object({ groupId: id, arrivedAfter, notCopiesOf }).strict(),
  z.object({ filter: withFieldFilters(messageFilterSchema.strict()), arrivedAfter, notCopiesOf }).strict(),
])
export type Selection = z.infer<typeof selectionSchema>
