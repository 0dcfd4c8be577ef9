import { z } from 'zod'

const id = z.string().regex(/^[1-9][0-9]{0,18}$/, 'must be a numeric id')

// POST /api/pauses: pause one entity (or the whole queue when entityKey is null) of a source's consumer queue.
export const createPauseSchema = z
  .object({
    sourceId: id,
    /** The consumer queue to pause; defaults to the origin queue most of the source's dead letters failed in. */
    queue: z.string().trim().min(1).max(255).optional(),
    entityKey: z.string().min(1).max(1024).nullable(),
    reason: z.string().trim().min(1, 'a reason is required').max(2000),
  })
  .strict()
export type CreatePauseInput = z.infer<typeof createPauseSchema>

export const listPausesQuerySchema = z.object({ status: z.enum(['active', 'all']).default('active') }).strict()

export type PauseDto = {
  id: string
  sourceId: string | null
  vhost: string
  queue: string
  entityKey: string | null
  /** How guards find a message's entity key (copied from the source's rule). */
  entityKeyRule: unknown
  status: 'active' | 'releasing' | 'resumed'
  reason: string | null
  createdBy: string
  createdAt: string
  replayJobId: string | null
  /** Messages held for this pause and not yet released. */
  held: number
  resumedAt: string | null
  resumedBy: string | null
  version: number
}

/** GET /api/pauses */
export type PauseListDto = { version: number; pauses: PauseDto[] }

/** Published on the lazarus.control exchange (routing key `pause` / `resume`), JSON. */
export type ControlEvent = { type: 'pause' | 'resume'; version: number; pause: PauseDto }
