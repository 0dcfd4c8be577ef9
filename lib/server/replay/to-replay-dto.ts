import 'server-only'
import { replayTargetSchema } from '@/lib/shared/schemas/source'
import type { ReplayItemDto, ReplayJobDto } from '@/lib/shared/schemas/replay'
import type { Selection } from '@/lib/shared/schemas/selection'
import { toStagingDto, type StagingColumns } from './stage-dto'

export type JobDtoRow = {
  id: string; kind: ReplayJobDto['kind']; status: ReplayJobDto['status']; total: number; published: number; confirmed: number
  unroutable: number; failed: number; skipped: number; released: number; cancelled: number; duplicates: number; rate_per_second: number
  current_rate: number | null; rate_fresh: boolean | null; target: unknown; selection: Selection; pause_entities: boolean; new_trace: boolean
  cancel_requested_at: Date | null; error: string | null; created_by: string; created_at: Date; started_at: Date | null; finished_at: Date | null
} & StagingColumns & {
  start_at: Date | null; approval_reasons: string[] | null; approval_expires_at: Date | null; approved_by: string | null; approved_at: Date | null
  rejected_by: string | null; rejected_at: Date | null; decision_comment: string | null
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null)

/** Field by field on purpose, as pauses/pause-row.ts says: the DTO is the API contract, the row is not. */
export function toReplayJobDto(row: JobDtoRow): ReplayJobDto {
  const target = replayTargetSchema.safeParse(row.target)
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    total: row.total,
    published: row.published,
    confirmed: row.confirmed,
    unroutable: row.unroutable,
    failed: row.failed,
    skipped: row.skipped,
    released: row.released,
    cancelled: row.cancelled,
    duplicates: row.duplicates,
    ratePerSecond: row.rate_per_second,
    currentRate: row.status === 'running' && row.rate_fresh && row.current_rate !== null ? Math.round(row.current_rate) : null,
    target: target.success ? target.data : { type: 'source' },
    selection: row.selection,
    pauseEntities: row.pause_entities,
    newTrace: row.new_trace,
    cancelRequested: row.cancel_requested_at !== null,
    error: row.error,
    createdBy: row.created_by,
    createdAt: iso(row.created_at)!,
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    staging: toStagingDto(row, row.started_at),
    startAt: iso(row.start_at),
    approvalReasons: row.approval_reasons,
    approvalExpiresAt: iso(row.approval_expires_at),
    approvedBy: row.approved_by,
    approvedAt: iso(row.approved_at),
    rejectedBy: row.rejected_by,
    rejectedAt: iso(row.rejected_at),
    decisionComment: row.decision_comment,
  }
}

export type ItemDtoRow = {
  seq: number; dead_letter_id: string; kind: ReplayItemDto['kind']; replay_id: string; status: ReplayItemDto['status']
  exchange: string | null; routing_key: string | null; error: string | null; published_at: Date | null; finished_at: Date | null
  entity_key: string | null; error_type: string | null; superseded_by_version: number | null; superseded_note: string | null
}

export function toReplayItemDto(row: ItemDtoRow): ReplayItemDto {
  return {
    id: String(row.seq),
    messageId: row.dead_letter_id,
    kind: row.kind,
    replayId: row.replay_id,
    status: row.status,
    exchange: row.exchange,
    routingKey: row.routing_key,
    error: row.error,
    publishedAt: iso(row.published_at),
    finishedAt: iso(row.finished_at),
    entityKey: row.entity_key,
    errorType: row.error_type,
    supersededByVersion: row.superseded_by_version,
    supersededNote: row.superseded_note,
  }
}
