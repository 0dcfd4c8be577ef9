import { z } from 'zod'
import { withFieldFilters } from './field-filter'
import { text } from './fields'
import { messageFilterSchema } from './message-filter'

/**
 * A saved view: a name and a message-list query string as the URL holds it (`status=dead&h.tenant=acme&range=24h`),
 * stored per user (README, "Saved views"). The query must be one the message list reads: its filters, field filters
 * (field-filter.ts) and a relative `range`; nothing else.
 */
const viewQuerySchema = withFieldFilters(messageFilterSchema.extend({ range: z.enum(['1h', '6h', '24h', '7d', '30d']).optional() }).strict())

export const MAX_SAVED_VIEWS = 100

export const saveViewSchema = z
  .object({
    name: text().trim().min(1, 'a name is required').max(80),
    query: text()
      .max(4000)
      .transform((q) => q.replace(/^\?/, ''))
      .superRefine((q, ctx) => {
        const params = new URLSearchParams(q)
        const keys = [...params.keys()]
        if (new Set(keys).size !== keys.length) ctx.addIssue({ code: 'custom', message: 'each filter may appear once' })
        const parsed = viewQuerySchema.safeParse(Object.fromEntries(params))
        if (!parsed.success) ctx.addIssue({ code: 'custom', message: `not a message-list filter: ${parsed.error.issues[0]?.message ?? 'unreadable'}` })
      }),
  })
  .strict()
export type SaveViewInput = z.input<typeof saveViewSchema>

export type SavedViewDto = { id: string; name: string; query: string; createdAt: string; updatedAt: string }
export type SavedViewListDto = { views: SavedViewDto[] }
