import 'server-only'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { Db } from '@/lib/server/platform/db'
import { logger } from '@/lib/server/platform/log'
import type { ListPausesQuery, PauseListDto } from '@/lib/shared/schemas/pause'
import { recordGuardHeartbeat } from './guard-heartbeat'
import { guardCounts } from './guard-status'
import { toPauseDto } from './pause-row'
import { selectPauseList } from './pauses-store'

const log = logger('pauses')

export type ListPausesOptions = { db: Db } & Pick<ListPausesQuery, 'status'> & Partial<Omit<ListPausesQuery, 'status'>> & SourceScope

/** Resumed pauses listed with status=all (newest first, after the open ones). */
const MAX_LISTED = 500

/**
 * GET /api/pauses → {version, pauses}. One statement, so the version and the list come from the same snapshot:
 * a list at `version` reflects every registry change up to it. With `queue` only that queue's pauses are listed
 * (in `vhost`, default `/`: a guard's own); the version stays the registry's. A guard's poll also names its
 * `instance`, recorded as its heartbeat. A person's list also counts the guards listening on each open pause's queue.
 */
export async function listPauses({ db: { sql }, ...options }: ListPausesOptions): Promise<PauseListDto> {
  const vhost = options.vhost ?? '/'
  const { version, rows } = await selectPauseList({
    sql,
    openOnly: options.status === 'active',
    sourceIds: allowedSourceIds(options),
    queue: options.queue === undefined ? undefined : { vhost, name: options.queue },
    limit: MAX_LISTED,
  })
  if (options.instance !== undefined && options.queue !== undefined) {
    // Bookkeeping only: a guard that cannot be recorded must still get its pauses.
    await recordGuardHeartbeat({ sql, beat: { vhost, queue: options.queue, instance: options.instance, guardVersion: options.guardVersion ?? null, registryVersion: options.registryVersion ?? null } }).catch((error) =>
      log.warn('cannot record a guard heartbeat', { queue: options.queue, instance: options.instance, error: (error as Error).message }),
    )
  }
  const pauses = rows.map(toPauseDto)
  // People (not guards, which poll their own queue) also see who listens on each queue listed.
  if (options.queue !== undefined) return { version: Number(version), pauses }
  const guards = await guardCounts({ sql, queues: pauses.filter((p) => p.status !== 'resumed') })
  return { version: Number(version), pauses, guards: [...guards.values()] }
}
