'use client'

import { useCallback, useEffect, useRef } from 'react'
import { keepPreviousData, useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import type { z } from 'zod'
import { auditKeys, groupKeys, messageKeys, pauseKeys, replayKeys, settingsKeys, summaryKeys, type QueryParams } from '@/lib/shared/query-keys'
import type { ReplayConfirmSettingsDto, UpdateReplayConfirmSettingsInput } from '@/lib/shared/schemas/replay-confirm'
import type { ReplayApprovalSettingsDto, UpdateReplayApprovalSettingsInput } from '@/lib/shared/schemas/replay-approval'
import type {
  createReplaySchema,
  ReplayArrivedDto,
  ReplayCreatedDto,
  ReplayDryRunDto,
  ReplayEditsDto,
  ReplayItemListDto,
  ReplayJobDetailDto,
  ReplayJobDto,
  ReplayListDto,
  ReplayPlanDto,
  ReplayRefailuresDto,
  ResolveResultDto, RestoreResultDto,
} from '@/lib/shared/schemas/replay'
import type { selectionSchema } from '@/lib/shared/schemas/selection'
import { apiGet, apiSend, toQueryString } from './api'
import type { BulkSelection } from './selection-store'

/** A selection as the request body spells it (dates as ISO strings). */
export type SelectionInput = z.input<typeof selectionSchema>

/** The body of a dry run or a job; `dryRun` is added by the caller. */
export type ReplayRequest = Omit<z.input<typeof createReplaySchema>, 'dryRun'>

/** The message list's selection as an API selection; the filter's keys are the list's, which the API validates. */
export function toSelectionInput(selection: BulkSelection): SelectionInput {
  return 'ids' in selection ? { ids: selection.ids } : { filter: selection.filter as Extract<SelectionInput, { filter: unknown }>['filter'] }
}

const ACTIVE: readonly ReplayJobDto['status'][] = ['pending', 'running']
const WAITING: readonly ReplayJobDto['status'][] = ['awaiting_approval', 'scheduled']

/** A job that has not started: awaiting approval or scheduled (polled slowly: it starts, expires or is decided). */
export const isWaitingJob = (job: Pick<ReplayJobDto, 'status'> | undefined) => Boolean(job && WAITING.includes(job.status))

/** A job still moving: polled, and its pages refreshed, until it ends. */
export const isActiveJob = (job: Pick<ReplayJobDto, 'status'> | undefined) => Boolean(job && ACTIVE.includes(job.status))

/**
 * The plan for a replay request (POST /api/replays with dryRun). A dry run changes nothing, so it is a query:
 * its body is the key, and changing the target, rate or pause option re-plans. Never cached across openings:
 * what matched a minute ago may not match now.
 */
export function useReplayPlan(request: ReplayRequest, options: { enabled?: boolean } = {}) {
  return useQuery<ReplayPlanDto>({
    queryKey: replayKeys.plan(request),
    queryFn: ({ signal }) => apiSend<ReplayDryRunDto>('POST', '/api/replays', { ...request, dryRun: true }, { signal }).then((r) => r.plan),
    placeholderData: keepPreviousData,
    enabled: options.enabled ?? true,
    staleTime: 0,
    gcTime: 0,
    refetchOnWindowFocus: false,
  })
}

/** Messages, groups and counters change when a job is created or a selection resolved. */
function invalidateMessageViews(client: ReturnType<typeof useQueryClient>) {
  void client.invalidateQueries({ queryKey: auditKeys.all })
  void client.invalidateQueries({ queryKey: messageKeys.all })
  void client.invalidateQueries({ queryKey: groupKeys.all })
  void client.invalidateQueries({ queryKey: summaryKeys.all })
}

export function useCreateReplay() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (request: ReplayRequest) => apiSend<ReplayCreatedDto>('POST', '/api/replays', request),
    onSuccess: () => {
      invalidateMessageViews(client)
      void client.invalidateQueries({ queryKey: replayKeys.lists() })
      void client.invalidateQueries({ queryKey: pauseKeys.all })
    },
  })
}

export function useReplays(params: QueryParams) {
  return useInfiniteQuery({
    queryKey: replayKeys.list(params),
    initialPageParam: null as string | null,
    queryFn: ({ signal, pageParam }) => apiGet<ReplayListDto>(`/api/replays${toQueryString({ ...params, cursor: pageParam })}`, { signal }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    placeholderData: keepPreviousData,
    // Progress columns move while any listed job runs.
    refetchInterval: (query) => (query.state.data?.pages.some((p) => p.replays.some((j) => isActiveJob(j))) ? 2_000 : 15_000),
  })
}

/** One job; polled every second while it runs, so the progress bar moves. */
export function useReplay(id: string) {
  return useQuery({
    queryKey: replayKeys.detail(id),
    queryFn: ({ signal }) => apiGet<ReplayJobDetailDto>(`/api/replays/${encodeURIComponent(id)}`, { signal }),
    // A halted job is watched too: its re-failures keep coming in, and another operator may resume it.
    refetchInterval: (query) => (isActiveJob(query.state.data) || query.state.data?.pauses.some((p) => p.status === 'releasing') ? 1_000 : query.state.data?.status === 'halted' ? 2_000 : isWaitingJob(query.state.data) ? 3_000 : false),
  })
}

/** GET /api/replays/{id}/refailures: replayed copies that failed again; polled while the job runs or is halted. */
export function useReplayRefailures(id: string, options: { live: boolean }) {
  return useQuery({
    queryKey: replayKeys.refailures(id),
    queryFn: ({ signal }) => apiGet<ReplayRefailuresDto>(`/api/replays/${encodeURIComponent(id)}/refailures`, { signal }),
    refetchInterval: options.live ? 2_000 : false,
  })
}

/** POST /api/replays/{id}/resume: a halted staged replay goes on. */
export function useResumeReplay(id: string) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: () => apiSend<ReplayJobDto>('POST', `/api/replays/${encodeURIComponent(id)}/resume`),
    onSettled: () => {
      void client.invalidateQueries({ queryKey: auditKeys.all })
      void client.invalidateQueries({ queryKey: replayKeys.detail(id) })
      void client.invalidateQueries({ queryKey: replayKeys.lists() })
    },
  })
}

/**
 * Each message's outcome in a job: polled while the job runs (`live`), and fetched once more when it stops being live,
 * since the last poll may predate the end (a cancel turns pending items cancelled; the last confirms land).
 */
export function useReplayItems(id: string, params: QueryParams, options: { live: boolean }) {
  const client = useQueryClient()
  const wasLive = useRef(options.live)
  useEffect(() => {
    if (wasLive.current && !options.live) void client.invalidateQueries({ queryKey: [...replayKeys.detail(id), 'items'] })
    wasLive.current = options.live
  }, [client, id, options.live])
  return useInfiniteQuery({
    queryKey: replayKeys.items(id, params),
    initialPageParam: null as string | null,
    queryFn: ({ signal, pageParam }) =>
      apiGet<ReplayItemListDto>(`/api/replays/${encodeURIComponent(id)}/items${toQueryString({ ...params, cursor: pageParam })}`, { signal }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    placeholderData: keepPreviousData,
    refetchInterval: options.live ? 2_000 : false,
  })
}

export function useCancelReplay(id: string) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: () => apiSend<ReplayJobDto>('POST', `/api/replays/${encodeURIComponent(id)}/cancel`),
    onSettled: () => {
      void client.invalidateQueries({ queryKey: auditKeys.all })
      void client.invalidateQueries({ queryKey: replayKeys.detail(id) })
      void client.invalidateQueries({ queryKey: replayKeys.lists() })
    },
  })
}

/** POST /api/replays/{id}/approve or /reject, with the comment (four eyes: docs/security.md#four-eyes). */
export function useDecideReplay(id: string) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: ({ verb, comment }: { verb: 'approve' | 'reject'; comment: string }) => apiSend<ReplayJobDto>('POST', `/api/replays/${encodeURIComponent(id)}/${verb}`, { comment }),
    onSettled: () => {
      void client.invalidateQueries({ queryKey: auditKeys.all })
      void client.invalidateQueries({ queryKey: replayKeys.detail(id) })
      void client.invalidateQueries({ queryKey: replayKeys.lists() })
    },
  })
}

/** "N arrived since this replay was planned" (GET /api/replays/{id}/arrived). */
export function useReplayArrived(id: string, enabled: boolean) {
  return useQuery({
    queryKey: replayKeys.arrived(id),
    queryFn: ({ signal }) => apiGet<ReplayArrivedDto>(`/api/replays/${encodeURIComponent(id)}/arrived`, { signal }),
    enabled,
    refetchInterval: 30_000,
  })
}

/** The edited messages a job sends, with their diffs: frozen at the job's creation, so read once. */
export function useReplayEdits(id: string, enabled: boolean) {
  return useQuery({
    queryKey: replayKeys.edits(id),
    queryFn: ({ signal }) => apiGet<ReplayEditsDto>(`/api/replays/${encodeURIComponent(id)}/edits`, { signal }),
    enabled,
    staleTime: Infinity,
  })
}

/** The job ended: what it did to messages and groups is now visible elsewhere too. */
export function useRefreshAfterJob() {
  const client = useQueryClient()
  return useCallback(() => {
    invalidateMessageViews(client)
    void client.invalidateQueries({ queryKey: replayKeys.lists() })
    void client.invalidateQueries({ queryKey: pauseKeys.all })
  }, [client])
}

/** POST /api/messages/restore: resolved messages back to dead, with a reason (issue 18, "Restore"). */
export function useRestore() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: { selection: SelectionInput; reason: string }) => apiSend<RestoreResultDto>('POST', '/api/messages/restore', input),
    onSuccess: () => invalidateMessageViews(client),
  })
}

export function useResolve() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: { selection: SelectionInput; reason: string }) => apiSend<ResolveResultDto>('POST', '/api/messages/resolve', input),
    onSuccess: () => invalidateMessageViews(client),
  })
}

const CONFIRM_SETTINGS = '/api/settings/replay-confirm'

/** From how many messages a replay needs its count typed (GET /api/settings/replay-confirm). */
export function useReplayConfirmSettings() {
  return useQuery({ queryKey: settingsKeys.replayConfirm(), queryFn: ({ signal }) => apiGet<ReplayConfirmSettingsDto>(CONFIRM_SETTINGS, { signal }) })
}

/** PUT /api/settings/replay-confirm (admins); later plans use the new thresholds (confirmation, staging offered). */
export function useSaveReplayConfirmSettings() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: UpdateReplayConfirmSettingsInput) => apiSend<ReplayConfirmSettingsDto>('PUT', CONFIRM_SETTINGS, input),
    onSuccess: (data) => {
      client.setQueryData(settingsKeys.replayConfirm(), data)
      void client.invalidateQueries({ queryKey: auditKeys.all })
    },
  })
}

const APPROVAL_SETTINGS = '/api/settings/replay-approval'

/** Which replays need a second operator's approval (GET /api/settings/replay-approval). */
export function useReplayApprovalSettings() {
  return useQuery({ queryKey: settingsKeys.replayApproval(), queryFn: ({ signal }) => apiGet<ReplayApprovalSettingsDto>(APPROVAL_SETTINGS, { signal }) })
}

/** PUT /api/settings/replay-approval (admins); later plans use the new policy. */
export function useSaveReplayApprovalSettings() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: UpdateReplayApprovalSettingsInput) => apiSend<ReplayApprovalSettingsDto>('PUT', APPROVAL_SETTINGS, input),
    onSuccess: (data) => {
      client.setQueryData(settingsKeys.replayApproval(), data)
      void client.invalidateQueries({ queryKey: auditKeys.all })
    },
  })
}
