import { z } from 'zod'
import { idSchema } from './fields'

/**
 * GET /api/messages/body-fields: the JSON Pointers of the scalar fields seen in a sample of recent JSON bodies (of a
 * group or a source, or of every message the caller may see), which the filter bar offers for `b.<pointer>` filters.
 */
export const bodyFieldsQuerySchema = z.object({ group: idSchema.optional(), source: idSchema.optional() }).strict()
export type BodyFieldsQuery = z.infer<typeof bodyFieldsQuerySchema>

export type BodyFieldDto = {
  pointer: string
  /** The JSON type it had most often in the sample. */
  kind: 'string' | 'number' | 'boolean' | 'null'
  /** In how many of the sampled bodies it was seen. */
  seen: number
}

/** `sampled`: the JSON bodies read (the most recent ones, up to a limit); `fields`: the most frequent first. */
export type BodyFieldsDto = { sampled: number; fields: BodyFieldDto[] }
