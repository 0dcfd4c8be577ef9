import { z } from 'zod'
import { FROM_BEFORE_TO, fromBeforeTo, isInt8Id } from './fields'
import { withFieldFilters } from './field-filter'
import { messageFilterSchema } from './message-filter'

export const EXPORT_FORMATS = ['jsonl', 'csv', 'md'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

export const MAX_EXPORT_IDS = 10_000

const idList = z
  .string()
  .transform((raw) => raw.split(',').map((id) => id.trim()).filter(Boolean))
  .pipe(
    z
      .array(z.string().refine(isInt8Id, 'ids must be numeric message ids separated by commas'))
      .min(1, 'ids must name at least one message')
      .max(MAX_EXPORT_IDS, `at most ${MAX_EXPORT_IDS} ids; export a filter or a group instead`),
  )

/**
 * GET /api/export: `format` plus either `ids=1,2,3` or the message-list filters (`group=ID` exports a group).
 * With no filter at all, everything stored is exported.
 */
export const exportQuerySchema = withFieldFilters(
  messageFilterSchema
    .extend({ format: z.enum(EXPORT_FORMATS, 'format must be one of jsonl, csv, md'), ids: idList.optional() })
    .strict()
    .refine(fromBeforeTo, FROM_BEFORE_TO)
    .refine(({ ids, format: _format, ...filter }) => !ids || Object.values(filter).every((v) => v === undefined), {
      message: 'ids cannot be combined with filters',
      path: ['ids'],
    }),
)
export type ExportQuery = z.infer<typeof exportQuerySchema>
