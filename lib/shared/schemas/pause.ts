import { z } from 'zod'
import { idSchema as id, text } from './fields'
import type { EntityKeyRule } from './source'

// POST /api/pauses: pause one entity (or the whole queue when entityKey is null) of a source's consumer queue.
export const createPauseSchema = z
  .object({
    sourceId: id,
    /** The consumer queue to pause; defaults to the origin queue most of the source's dead letters failed in. */
    queue: text().trim().min(1).max(255).optional(),
    entityKey: text().min(1).max(1024).nullable(),
    reason: text().trim().min(1, 'a reason is required').max(2000),
  })
  .strict()
export type CreatePauseInput = z.infer<typeof createPauseSchema>

/** Names as RabbitMQ allows them (at most 255 bytes), minus control characters: they are stored and logged. */
const brokerName = z
  .string()
  .min(1)
  .max(255)
  .refine((v) => new TextEncoder().encode(v).length <= 255, 'at most 255 bytes')
  .refine((v) => !/[\u0000-\u001f\u007f]/.test(v), 'control characters are not allowed')

// GET /api/pauses. Guards (2.x) poll it with their queue, vhost, instance id and version: the poll is their heartbeat.
export const listPausesQuerySchema = z
  .object({
    status: z.enum(['active', 'all']).default('active'),
    /** Only this queue's pauses (in `vhost`, default `/`). */
    queue: brokerName.optional(),
    vhost: brokerName.optional(),
    /** The polling guard's id (host, pid, random part); recorded as a heartbeat. */
    instance: z.string().min(1).max(200).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces').optional(),
    /** The polling guard's GUARD_VERSION. */
    guardVersion: z.string().min(1).max(64).regex(/^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?$/, 'a semver version').optional(),
    /** The registry version of the list the polling guard read last (guard 2.1). */
    registryVersion: z.string().regex(/^\d{1,15}$/, 'a registry version').transform(Number).optional(),
  })
  .strict()
  .refine((q) => q.instance === undefined || q.queue !== undefined, { path: ['queue'], message: 'a guard heartbeat (instance) names its queue' })
export type ListPausesQuery = z.infer<typeof listPausesQuerySchema>

export type PauseDto = {
  id: string
  sourceId: string | null
  vhost: string
  queue: string
  entityKey: string | null
  /** How guards find a message's entity key (copied from the source's rule); null for a whole-queue pause. */
  entityKeyRule: EntityKeyRule | null
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

/** GET /api/pauses; `guards` (not in a guard's poll): who listens on each queue the listed pauses are on. */
export type PauseListDto = { version: number; pauses: PauseDto[]; guards?: GuardCountsDto[] }

/** Published on the lazarus.control exchange (routing key `pause` / `resume`), JSON. */
export type ControlEvent = { type: 'pause' | 'resume'; version: number; pause: PauseDto }

// GET /api/pauses/guards: who listens on a source's consumer queue (the one given, or where most of its messages
// failed); without sourceId, on every source's.
export const guardStatusQuerySchema = z
  .object({
    sourceId: id.optional(),
    queue: brokerName.optional(),
  })
  .strict()
  .refine((q) => q.queue === undefined || q.sourceId !== undefined, { path: ['queue'], message: 'a queue is looked up for a source (sourceId)' })
export type GuardStatusQuery = z.infer<typeof guardStatusQuerySchema>

/**
 * The guards polling for one queue (docs/ARCHITECTURE.md#pause-hold-release, "Who listens"): `listening` polled within
 * the last two minutes; `upToDate` of those also hold every change of this queue's pauses.
 */
export type GuardCountsDto = { vhost: string; queue: string; listening: number; upToDate: number }

/** GET /api/pauses/guards: one entry per source asked about whose consumer queue is known. */
export type GuardStatusListDto = { queues: (GuardCountsDto & { sourceId: string })[] }
