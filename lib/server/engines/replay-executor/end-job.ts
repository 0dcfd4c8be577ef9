import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Sql } from '@/lib/server/platform/db/sql'
import { finishJob, type FinishedJob } from '@/lib/server/replay/replay-store'

export type EndJobOptions = { sql: Sql; jobId: string; owner: string; status: 'completed' | 'cancelled' | 'failed'; error?: string | null }

/**
 * Marks a job finished and audits how it went, in one transaction, if this worker still holds its lease; null when it
 * lost it (the worker that holds it now ends the job).
 */
export async function endJob({ sql, jobId, owner, status, error = null }: EndJobOptions): Promise<FinishedJob | null> {
  return sql.transaction(async (tx) => {
    const job = await finishJob({ sql: tx, jobId, owner, status, error })
    if (!job) return null
    const parts = [
      `${job.confirmed} replayed`,
      job.released > 0 ? `${job.released} released` : null,
      job.unroutable > 0 ? `${job.unroutable} unroutable` : null,
      job.failed > 0 ? `${job.failed} failed` : null,
      job.skipped > 0 ? `${job.skipped} could not be replayed` : null,
      job.cancelled > 0 ? `${job.cancelled} cancelled` : null,
    ].filter(Boolean)
    await recordAudit({
      sql: tx,
      actor: job.created_by,
      action: 'replay.finished',
      subject: { type: 'replay', id: job.id },
      summary: `${job.kind === 'release' ? 'Release' : 'Replay'} ${job.id} ${status}: ${parts.join(', ')} of ${job.total}`,
      details: {
        kind: job.kind, total: job.total, published: job.published, confirmed: job.confirmed, released: job.released,
        unroutable: job.unroutable, failed: job.failed, skipped: job.skipped, cancelled: job.cancelled,
        cancelledBy: job.cancel_requested_by, error,
      },
      outcome: status,
    })
    return job
  })
}
