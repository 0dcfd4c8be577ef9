import 'server-only'
import { getDb } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { DEFAULT_ENTITY_HEADER } from '@/lib/guard/protocol'
import { entityKeyRuleSchema, type EntityKeyRule } from '@/lib/shared/schemas/source'
import type { CreatePauseInput, PauseDto } from '@/lib/shared/schemas/pause'
import { publishControlEvents } from './control-events'
import { describePause, findOpenPauses, insertPauses } from './insert-pause'
import { toControlEvents } from './pause-row'

export type CreatePauseOptions = {
  input: CreatePauseInput
  actor: string
  /**
   * Admins only: `input.queue` may name any queue. Everyone else may pause only a queue the source's stored dead letters
   * failed in (their origin queues): a pause stops a consumer, and must not become a way to stop any consumer on the
   * broker. Default false.
   */
  allowAnyQueue?: boolean
} & SourceScope

/** How many of a source's most recent dead letters are looked at to find the queue they failed in. */
const ORIGIN_SAMPLE = 1_000

/**
 * POST /api/pauses: pauses one entity (or, with entityKey null, the whole queue) on the consumer queue a source's
 * dead letters come from. Guards learn it from the 'pause' event published after commit.
 */
export async function createPause({ input, actor, allowAnyQueue = false, ...scope }: CreatePauseOptions): Promise<PauseDto> {
  const sourceId = parseId(input.sourceId, 'source')
  const sourceIds = allowedSourceIds(scope)
  if (sourceIds && !sourceIds.includes(sourceId.toString())) throw notFound(`source ${input.sourceId}`)
  const { sql } = await getDb()
  const pause = await sql.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: string; vhost: string; queue: string; kind: string; entity_key: unknown }>(
      'SELECT id::text, vhost, queue, kind, entity_key FROM sources WHERE id = $1::bigint',
      [sourceId],
    )
    const source = rows[0]
    if (!source) throw notFound(`source ${input.sourceId}`)
    if (source.kind === 'hold') throw new AppError('unprocessable', `"${source.queue}" is Lazarus' hold queue; pause the source the messages failed in`)
    if (input.queue !== undefined && !allowAnyQueue && !(await isOriginQueue(tx, source.id, input.queue))) {
      const allowed = await originQueues(tx, source.id)
      throw new AppError(
        'unprocessable',
        allowed.length === 0
          ? `none of the dead letters of "${source.queue}" names the queue it failed in, so there is no queue to pause; only an admin can name one`
          : `"${input.queue}" is not a queue the dead letters of "${source.queue}" failed in; pause one of ${allowed.map((q) => `"${q}"`).join(', ')} (only an admin can name another queue)`,
        { queue: input.queue, allowedQueues: allowed },
      )
    }
    const queue = input.queue ?? (await mostCommonOriginQueue(tx, source.id))
    if (!queue) {
      throw new AppError('unprocessable', `none of the dead letters of "${source.queue}" names the queue it failed in; say which queue to pause with "queue"`, [
        { path: ['queue'], message: 'required for this source' },
      ])
    }
    const [existing] = await findOpenPauses(tx, [{ vhost: source.vhost, queue, entityKey: input.entityKey }])
    if (existing) throw new AppError('conflict', `${describePause(existing)} is already paused (pause ${existing.id})`, { id: existing.id })
    const [created] = await insertPauses(tx, {
      actor,
      pauses: [{ sourceId: source.id, vhost: source.vhost, queue, entityKey: input.entityKey, entityKeyRule: input.entityKey === null ? null : ruleOf(source.entity_key), reason: input.reason }],
    })
    return created
  })
  await publishControlEvents(toControlEvents('pause', [pause]))
  return pause
}

/** The source's entity-key rule; without one Lazarus (and so the guard) reads the x-entity-key header. */
export function ruleOf(stored: unknown): EntityKeyRule {
  const rule = entityKeyRuleSchema.safeParse(stored)
  return rule.success ? rule.data : { kind: 'header', name: DEFAULT_ENTITY_HEADER }
}

const MAX_ALLOWED_LISTED = 50

/** Whether any stored dead letter of the source failed in `queue`; the common case finds one among the newest rows. */
async function isOriginQueue(tx: Sql, sourceId: string, queue: string): Promise<boolean> {
  const { rows } = await tx.query<{ found: boolean }>(
    'SELECT EXISTS (SELECT 1 FROM dead_letters WHERE source_id = $1::bigint AND origin_queue = $2) AS found',
    [sourceId, queue],
  )
  return rows[0].found
}

/** The queues the source's dead letters failed in, for the refusal (a full pass over the source: refusals are rare). */
async function originQueues(tx: Sql, sourceId: string): Promise<string[]> {
  const { rows } = await tx.query<{ origin_queue: string }>(
    `SELECT DISTINCT origin_queue FROM dead_letters WHERE source_id = $1::bigint AND origin_queue IS NOT NULL ORDER BY origin_queue LIMIT ${MAX_ALLOWED_LISTED}`,
    [sourceId],
  )
  return rows.map((r) => r.origin_queue)
}

/** The origin queue most of the source's recent dead letters failed in (a bounded sample, not a scan). */
async function mostCommonOriginQueue(tx: Sql, sourceId: string): Promise<string | null> {
  const { rows } = await tx.query<{ origin_queue: string }>(
    `SELECT origin_queue FROM (
       SELECT origin_queue FROM dead_letters WHERE source_id = $1::bigint ORDER BY failed_at DESC, id DESC LIMIT ${ORIGIN_SAMPLE}
     ) recent WHERE origin_queue IS NOT NULL GROUP BY origin_queue ORDER BY count(*) DESC, origin_queue LIMIT 1`,
    [sourceId],
  )
  return rows[0]?.origin_queue ?? null
}
