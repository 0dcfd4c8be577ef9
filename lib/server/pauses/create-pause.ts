import 'server-only'
import type { ExchangePublisher } from '@/lib/server/platform/broker/exchange-publisher'
import type { Db } from '@/lib/server/platform/db'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { DEFAULT_ENTITY_HEADER } from '@/packages/guard/src/protocol'
import { entityKeyRuleSchema, type EntityKeyRule } from '@/lib/shared/schemas/source'
import type { CreatePauseInput, PauseDto } from '@/lib/shared/schemas/pause'
import { publishControlEvents } from './control-events'
import { describePause } from './pause-audit'
import { findOpenPauses, insertPauses } from './insert-pause'
import { toControlEvents } from './pause-row'
import { findPausableSource, isOriginQueue, mostCommonOriginQueue, originQueues } from './pauses-store'

export type CreatePauseOptions = {
  db: Db
  /** Where the 'pause' event goes after the commit: the composition root's publisher of lazarus.control. */
  control: ExchangePublisher
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
export async function createPause({ db, control, input, actor, allowAnyQueue = false, ...scope }: CreatePauseOptions): Promise<PauseDto> {
  const sourceId = parseId(input.sourceId, 'source').toString()
  const sourceIds = allowedSourceIds(scope)
  if (sourceIds && !sourceIds.includes(sourceId)) throw notFound(`source ${input.sourceId}`)
  const pause = await db.sql.transaction(async (sql) => {
    const source = await findPausableSource({ sql, sourceId })
    if (!source) throw notFound(`source ${input.sourceId}`)
    if (source.kind === 'hold') throw new AppError('unprocessable', `"${source.queue}" is Lazarus' hold queue; pause the source the messages failed in`)
    if (source.kind === 'jetstream') throw new AppError('unprocessable', `"${source.queue}" is a JetStream source; pauses hold RabbitMQ messages only (docs/jetstream.md#what-is-not-there-yet)`)
    if (input.queue !== undefined && !allowAnyQueue && !(await isOriginQueue({ sql, sourceId: source.id, queue: input.queue }))) {
      const allowed = await originQueues({ sql, sourceId: source.id, limit: MAX_ALLOWED_LISTED })
      throw new AppError(
        'unprocessable',
        allowed.length === 0
          ? `none of the dead letters of "${source.queue}" names the queue it failed in, so there is no queue to pause; only an admin can name one`
          : `"${input.queue}" is not a queue the dead letters of "${source.queue}" failed in; pause one of ${allowed.map((q) => `"${q}"`).join(', ')} (only an admin can name another queue)`,
        { queue: input.queue, allowedQueues: allowed },
      )
    }
    const queue = input.queue ?? (await mostCommonOriginQueue({ sql, sourceId: source.id, sample: ORIGIN_SAMPLE }))
    if (!queue) {
      throw new AppError('unprocessable', `none of the dead letters of "${source.queue}" names the queue it failed in; say which queue to pause with "queue"`, [
        { path: ['queue'], message: 'required for this source' },
      ])
    }
    const [existing] = await findOpenPauses({ sql, keys: [{ vhost: source.vhost, queue, entityKey: input.entityKey }] })
    if (existing) throw new AppError('conflict', `${describePause(existing)} is already paused (pause ${existing.id})`, { id: existing.id })
    const [created] = await insertPauses({
      sql,
      actor,
      pauses: [{ sourceId: source.id, vhost: source.vhost, queue, entityKey: input.entityKey, entityKeyRule: input.entityKey === null ? null : ruleOf(source.entity_key), reason: input.reason }],
    })
    return created
  })
  await publishControlEvents({ control, events: toControlEvents('pause', [pause]) })
  return pause
}

/** The source's entity-key rule; without one Lazarus (and so the guard) reads the x-entity-key header. */
export function ruleOf(stored: unknown): EntityKeyRule {
  const rule = entityKeyRuleSchema.safeParse(stored)
  return rule.success ? rule.data : { kind: 'header', name: DEFAULT_ENTITY_HEADER }
}

const MAX_ALLOWED_LISTED = 50
