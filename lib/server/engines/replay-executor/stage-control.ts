import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import { decideHalt, publishedPerStage, type NewGroupRefailure } from '@/lib/server/replay/halt-decision'
import { selectRefailures } from '@/lib/server/replay/refailures'
import type { RunControl } from './run-control'
import { advanceStage, deferJob, expireHaltedJobs, haltJob, markStagePublished, readStage, type StageRow } from './stage-control-store'

/*
 * Staged jobs in the executor (docs/ARCHITECTURE.md#stages-and-halts), and why a crash changes no decision:
 *
 * - The stage, its bounds, when it finished publishing and the halt are columns of the job, written before the
 *   executor acts on them. A run that dies mid-stage leaves the stage as it was: the next run publishes the rest of
 *   the same stage (claimItems never reads past its bound). Dying between the last outcome and markStagePublished
 *   only starts the window a little later.
 * - A stage's window is measured from stage_published_at on the database's clock. While it runs the job is given
 *   back (not_before): no lease held idle, and another executor may take it. Every RECHECK_MS it is claimed again to
 *   look at the re-failures, so a halt does not wait for the window's end.
 * - A halt is decided and written (status 'halted', the halt with its evidence, the audit entry) in one transaction
 *   before publishing stops; the run then waits for its confirms and writes their outcomes. Dying after the write:
 *   the job stays halted (claimJob never takes one); the items it had in flight are published again after a resume,
 *   as after any crash. Dying before it: nothing was decided, and the next run decides again from the same rows.
 */

/** While a window runs, the job is looked at again this often for re-failures. */
const RECHECK_MS = 5_000
/** A wait this short is spent holding the lease rather than giving the job back. */
const HOLD_WAIT_MS = 2_000
/** While publishing a stage, the re-failures are read at most this often. */
const CHECK_WHILE_PUBLISHING_MS = 2_000

export type StageStep = { kind: 'publish' } | { kind: 'done' } | { kind: 'halted' } | { kind: 'deferred' }

export type StageControlOptions = { sql: Sql; jobId: string; owner: string; control: RunControl; log: Logger }

export class StageControl {
  private lastCheck = 0

  private constructor(
    private readonly options: StageControlOptions,
    private row: StageRow,
  ) {}

  /** The job's stage, or null for a job published straight through. */
  static async load(options: StageControlOptions): Promise<StageControl | null> {
    const row = await options.control.retry('read the replay stage', () => readStage({ sql: options.sql, jobId: options.jobId }))
    return row ? new StageControl(options, row) : null
  }

  /** The last item seq the current stage may publish. */
  bound(): number {
    return this.row.stage_bounds[Math.min(this.row.stage, this.row.stage_bounds.length - 1)]
  }

  /**
   * What the run does next: publish (the current stage, or the next one after its window passed), done (the last
   * stage is published), halted, or deferred (the window runs on; the lease was given back).
   */
  async step(): Promise<StageStep> {
    const { sql, jobId, owner, control } = this.options
    for (;;) {
      this.row = (await control.retry('read the replay stage', () => readStage({ sql, jobId })))!
      if (await this.checkNow()) return { kind: 'halted' }
      const { row } = this
      if (row.stage_published_at === null) return { kind: 'publish' }
      if (row.stage >= row.stage_bounds.length - 1) return { kind: 'done' }
      const windowEnd = new Date(row.stage_published_at).getTime() + row.window_ms
      const now = new Date(row.now).getTime()
      if (now >= windowEnd) {
        const advanced = await control.retry('start the next stage', () => advanceStage({ sql, jobId, owner, from: row.stage }))
        if (!advanced) return { kind: 'deferred' }
        this.options.log.info('replay stage started', { job: jobId, stage: row.stage + 1 })
        continue
      }
      const wait = Math.min(windowEnd - now, RECHECK_MS)
      if (wait <= HOLD_WAIT_MS) {
        await control.pause(wait)
        if (control.mustStopPublishing()) return { kind: 'publish' }
        continue
      }
      await control.retry('defer the replay job', () => deferJob({ sql, jobId, owner, until: new Date(Date.now() + wait) }))
      return { kind: 'deferred' }
    }
  }

  /** The current stage's items all have outcomes: its window starts. */
  async published(): Promise<void> {
    const { sql, jobId, owner, control } = this.options
    await control.retry('record the stage published', () => markStagePublished({ sql, jobId, owner, stage: this.row.stage }))
  }

  /** Between chunks: reads the re-failures every few seconds and halts the job when they call for it. */
  async checkWhilePublishing(): Promise<boolean> {
    if (Date.now() - this.lastCheck < CHECK_WHILE_PUBLISHING_MS) return false
    const { sql, jobId, control } = this.options
    const row = await control.retry('read the replay stage', () => readStage({ sql, jobId }))
    if (row) this.row = row
    return this.checkNow()
  }

  /** Decides, and writes, a halt from the re-failures that count; true when the job is (now) halted. */
  private async checkNow(): Promise<boolean> {
    const { sql, jobId, owner, control, log } = this.options
    this.lastCheck = Date.now()
    if (control.cancelRequested) return false
    const refailures = await control.retry('read the re-failures', () => selectRefailures({ sql, jobId }))
    const counted = refailures.filter((r) => r.counted)
    if (counted.length === 0) return false
    const { row } = this
    const stages = publishedPerStage(row.stage_bounds, row.claimed_through, row.stage)
    const groups = new Map<string, NewGroupRefailure>()
    for (const r of counted) {
      const stage = stages[r.stage]
      if (stage) stage.refailed++
      if (!r.new_group) continue
      const g = groups.get(r.group_id) ?? { id: r.group_id, title: r.group_title, count: 0, stage: r.stage }
      g.count++
      g.stage = Math.min(g.stage, r.stage)
      groups.set(r.group_id, g)
    }
    const decision = decideHalt({ stages, newGroups: [...groups.values()], haltShare: row.halt_share, haltMin: row.halt_min })
    if (!decision) return false
    const halted = await control.retry('halt the replay job', () => haltJob({ sql, jobId, owner, decision }))
    if (!halted) return false
    log.warn('replay job halted', { job: jobId, stage: decision.stage, reason: decision.reason, refailed: decision.evidence.refailed })
    control.halted = true
    control.wake()
    return true
  }
}

/** The executor's sweep of halts nobody answered: at most every `everyMs`, jobs halted past `timeoutMs` are cancelled. */
export function haltSweeper({ sql, timeoutMs, everyMs = 5_000, log }: { sql: Sql; timeoutMs: number; everyMs?: number; log: Logger }): () => Promise<void> {
  let last = 0
  return async () => {
    if (Date.now() - last < everyMs) return
    last = Date.now()
    try {
      const ids = await expireHaltedJobs({ sql, timeoutMs })
      if (ids.length > 0) log.info('halted replay jobs timed out; cancelling', { jobs: ids })
    } catch (error) {
      log.warn('cannot cancel timed-out halted replay jobs', { error: (error as Error).message })
    }
  }
}
