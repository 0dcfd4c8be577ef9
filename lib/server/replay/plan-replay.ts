import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { logger } from '@/lib/server/platform/log'
import type { TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { replayTargetSchema } from '@/lib/shared/schemas/source'
import type { CreateReplayInput, ExclusionReason, ReplayPlanDto, ReplayPlanTargetDto, ReplayPlanVersionsDto, ReplayTarget } from '@/lib/shared/schemas/replay'
import { MAX_HEADER_TABLE_BYTES, replayHeaderBytes } from './publish-message'
import { replaySettings, type ReplaySettings } from './replay-settings'
import { routeKey, type ExchangeNode } from './route-match'
import { MESSAGES_FROM, STATUS_SQL } from '@/lib/server/selection/message-filter-sql'
import { selectionSql } from '@/lib/server/selection/selection-sql'
import { getReplayConfirmSettings } from './replay-confirm-settings'
import { planStaging } from './stage-plan'
import { loadTopology, type Topology } from './topology'
import { approvalReasons } from './approval-policy'
import { getReplayApprovalSettings } from './replay-approval-settings'
import { assertCustomTargetAllowed, loadTargetRules, refusedSubjectSql, refusedTargetSql } from './target-policy'
import { describeJetStreamTargets } from './jetstream-targets'
import { planEntityVersions } from './entity-versions'

const log = logger('replay')

export type PlanReplayOptions = {
  input: CreateReplayInput
  actor?: string
  db: Db
  settings?: ReplaySettings
  /**
   * The sources whose messages the caller may see and replay: the selection is narrowed to them before anything is
   * counted, so neither the plan nor the job reveals or touches messages of other sources. null: every source.
   */
  sourceIds?: string[] | null
}

/**
 * What creating the job needs besides the plan: the same eligibility condition (so the job takes exactly what the plan
 * counted, minus rows that changed in between), and how each message's exchange and routing key are chosen.
 */
export type PlannedReplay = {
  plan: ReplayPlanDto
  target: ReplayTarget
  /** Rows to replay, on dead_letters `d` with its status `st`, joined to sources `s`; numbered against `params`. */
  eligibleWhere: string
  exchangeSql: string
  routingKeySql: string
  params: unknown[]
  /** With onlyNewestPerEntity: the selected messages below their entity's newest version, resolved as superseded. */
  supersededIds: string[]
}

/** Headers whose JSON text is below this cannot encode to 64 KiB (every typed value's JSON is longer than its bytes). */
const HEADER_TEXT_PRECHECK = 60_000
const MAX_TARGET_ROWS = 200
const MAX_TARGETS_SHOWN = 50
const MAX_QUEUE_NAMES = 20

const EXCLUSIONS: ExclusionReason[] = ['unknown-source', 'jetstream', 'not-dead', 'replay-cap', 'too-large', 'headers-too-large', 'no-origin', 'target-refused', 'superseded']

/** A JetStream source's message (docs/jetstream.md#replay): on sources `s`, which may be missing (LEFT JOIN). */
const JETSTREAM_ROW = `s.kind = 'jetstream'`

/**
 * The exchange, routing key and missing-origin condition of each message, per its source's broker: a JetStream message
 * has no exchange (NULL) and its routing key is the subject its copy is published to, the one it was read from (any
 * target but custom) or the custom target's routing key.
 */
function targetSql(target: ReplayTarget, params: unknown[]): { exchange: string; routingKey: string; noOrigin: string; subject: string } {
  const rabbit = rabbitTargetSql(target, params)
  let subject = 'd.origin_routing_keys[1]'
  if (target.type === 'custom') {
    params.push(target.routingKey)
    subject = `$${params.length}::text`
  }
  return {
    exchange: `CASE WHEN ${JETSTREAM_ROW} THEN NULL ELSE ${rabbit.exchange} END`,
    routingKey: `CASE WHEN ${JETSTREAM_ROW} THEN ${subject} ELSE ${rabbit.routingKey} END`,
    // A message its stream had removed before the capture read it is a record without data: nothing to send back.
    noOrigin: `CASE WHEN ${JETSTREAM_ROW} THEN (${subject} IS NULL OR 'message-gone' = ANY(d.flags)) ELSE ${rabbit.noOrigin} END`,
    subject,
  }
}

function rabbitTargetSql(target: ReplayTarget, params: unknown[]): { exchange: string; routingKey: string; noOrigin: string } {
  if (target.type === 'queue') return { exchange: `''`, routingKey: 'd.origin_queue', noOrigin: 'd.origin_queue IS NULL' }
  if (target.type === 'custom') {
    params.push(target.exchange, target.routingKey)
    const [exchange, routingKey] = [`$${params.length - 1}::text`, `$${params.length}::text`]
    // Never true; it mentions both parameters so every statement of the plan can type them.
    return { exchange, routingKey, noOrigin: `(${exchange} IS NULL OR ${routingKey} IS NULL)` }
  }
  return {
    exchange: 'd.origin_exchange',
    routingKey: `coalesce(d.origin_routing_keys[1], '')`,
    // The default exchange needs a key (the queue's name) to go anywhere.
    noOrigin: `(d.origin_exchange IS NULL OR (d.origin_exchange = '' AND coalesce(d.origin_routing_keys[1], '') = ''))`,
  }
}

/** The source's default target when every selected message shares one; otherwise the original exchange. */
async function defaultTarget({ sql, selection, params }: { sql: Sql; selection: string; params: unknown[] }): Promise<ReplayTarget> {
  const { rows } = await sql.query<{ default_target: unknown }>(
    `SELECT DISTINCT s.default_target FROM sources s WHERE s.id IN (SELECT DISTINCT d.source_id FROM ${MESSAGES_FROM} WHERE ${selection}) LIMIT 2`,
    params,
  )
  if (rows.length !== 1) return { type: 'source' }
  const parsed = replayTargetSchema.safeParse(rows[0].default_target)
  return parsed.success ? parsed.data : { type: 'source' }
}

type HeaderRow = { id: string; headers: TypedTable; lineage_origin_id: string | null; replay_count: number }

/**
 * What a replay would send of the selected messages that were edited: their newest revision
 * (docs/ARCHITECTURE.md#revisions). Edits are rare, so the newest revisions are read once and joined by hash,
 * rather than looked up row by row across a selection of 200,000.
 */
async function loadEditedMessages({ sql, selection, params }: { sql: Sql; selection: string; params: unknown[] }): Promise<Array<HeaderRow & { body_size: number }>> {
  const { rows } = await sql.query<HeaderRow & { body_size: number }>(
    `SELECT d.id::text, n.body_size, n.headers, d.lineage_origin_id, d.replay_count
     FROM ${MESSAGES_FROM}
     JOIN (SELECT DISTINCT ON (dead_letter_id) dead_letter_id, body_size, headers FROM message_revisions ORDER BY dead_letter_id, revision DESC) n
       ON n.dead_letter_id = d.id
     WHERE ${selection} AND ${STATUS_SQL} = 'dead'`,
    params,
  )
  return rows
}

/** Ids of selected rows whose replayed header table would not fit AMQP's 64 KiB (exact, but only for big ones). */
async function oversizedHeaderIds(options: { sql: Sql; selection: string; params: unknown[]; actor: string; edited: HeaderRow[] }): Promise<string[]> {
  const { sql, selection, params, actor, edited } = options
  const editedIds = new Set(edited.map((r) => r.id))
  const { rows: stored } = await sql.query<HeaderRow>(
    `SELECT d.id::text, d.headers, d.lineage_origin_id, d.replay_count FROM ${MESSAGES_FROM}
     WHERE ${selection} AND ${STATUS_SQL} = 'dead' AND octet_length(d.headers::text) > ${HEADER_TEXT_PRECHECK}`,
    params,
  )
  const rows = [...stored.filter((r) => !editedIds.has(r.id)), ...edited.filter((r) => Buffer.byteLength(JSON.stringify(r.headers)) > HEADER_TEXT_PRECHECK)]
  return rows
    .filter((r) => {
      try {
        return replayHeaderBytes({ id: r.id, headers: r.headers, lineageOriginId: r.lineage_origin_id, replayCount: r.replay_count }, actor) > MAX_HEADER_TABLE_BYTES
      } catch {
        return true
      }
    })
    .map((r) => r.id)
}

/** Decides what the replay would do, without changing anything (the dry run, and the first step of creating a job). */
export async function planReplay(options: PlanReplayOptions): Promise<PlannedReplay> {
  const { sql } = options.db
  const settings = options.settings ?? replaySettings()
  const { input } = options
  const actor = options.actor ?? 'anonymous'
  const params: unknown[] = []
  const { where: selection } = selectionSql({ selection: input.selection, params, sourceIds: options.sourceIds })
  const target = input.target ?? (await defaultTarget({ sql, selection, params }))
  // Before anything reads the broker: a refused custom target must not get as far as a topology lookup.
  const [rules, { largeJobMessages, stagedFromMessages }, approvalPolicy] = await Promise.all([
    loadTargetRules({ db: options.db, settings }),
    getReplayConfirmSettings({ db: options.db }),
    getReplayApprovalSettings({ db: options.db }),
  ])
  assertCustomTargetAllowed(target, rules)
  const edited = await loadEditedMessages({ sql, selection, params })
  const bigHeaders = await oversizedHeaderIds({ sql, selection, params, actor, edited })
  const t = targetSql(target, params)
  const refused = `(${refusedTargetSql(t.exchange, t.routingKey, rules, params)} OR (${JETSTREAM_ROW} AND ${refusedSubjectSql(t.subject, target, rules, params)}))`
  params.push(settings.nats !== null)
  const natsConfigured = `$${params.length}::bool`
  // An edited message is sized by its newest revision: an edit can shrink a body over the limit, or grow one past it.
  const editedTooLarge = edited.filter((r) => r.body_size > settings.maxBodyBytes).map((r) => r.id)
  params.push(settings.cap, settings.maxBodyBytes, bigHeaders, edited.map((r) => r.id), editedTooLarge)
  const [cap, maxBody, big, editedIds, editedBig] = [4, 3, 2, 1, 0].map((back) => `$${params.length - back}`)
  const tooLarge = `(d.id = ANY(${editedBig}::bigint[]) OR (d.body_size > ${maxBody}::int AND NOT d.id = ANY(${editedIds}::bigint[])))`
  const publishable = `${selection} AND s.id IS NOT NULL AND (s.kind <> 'jetstream' OR ${natsConfigured}) AND ${STATUS_SQL} = 'dead' AND d.replay_count < ${cap}::int
    AND NOT ${tooLarge} AND NOT (d.id = ANY(${big}::bigint[])) AND NOT ${t.noOrigin} AND NOT ${refused}`
  // Entity versions (docs/ARCHITECTURE.md#entity-versions): what "only the newest per entity" leaves out is excluded
  // as 'superseded', after every other reason.
  const onlyNewest = input.onlyNewestPerEntity === true
  const { versions, olderIds } = await planEntityVersions({ sql, eligibleWhere: publishable, params, withOlderIds: onlyNewest })
  params.push(olderIds)
  const older = `$${params.length}::bigint[]`
  const reasonSql = `CASE
      WHEN s.id IS NULL THEN 'unknown-source'
      WHEN ${JETSTREAM_ROW} AND NOT ${natsConfigured} THEN 'jetstream'
      WHEN st.status <> 'dead' THEN 'not-dead'
      WHEN d.replay_count >= ${cap}::int THEN 'replay-cap'
      WHEN ${tooLarge} THEN 'too-large'
      WHEN d.id = ANY(${big}::bigint[]) THEN 'headers-too-large'
      WHEN ${t.noOrigin} THEN 'no-origin'
      WHEN ${refused} THEN 'target-refused'
      WHEN d.id = ANY(${older}) THEN 'superseded'
    END`
  const eligibleWhere = `${publishable} AND NOT (d.id = ANY(${older}))`

  const [reasons, routes, sources] = await Promise.all([
    sql.query<{ reason: ExclusionReason | null; n: number; sample: string[] | null }>(
      `SELECT reason, count(*)::int AS n, (array_agg(id ORDER BY id) FILTER (WHERE reason IS NOT NULL))[1:5] AS sample
       FROM (SELECT d.id::text AS id, ${reasonSql} AS reason FROM ${MESSAGES_FROM} LEFT JOIN sources s ON s.id = d.source_id WHERE ${selection}) x
       GROUP BY reason`,
      params,
    ),
    sql.query<RouteRow & { total_rows: number }>(
      `SELECT coalesce(${t.exchange}, '') AS exchange, ${t.routingKey} AS routing_key, d.origin_queue, ${JETSTREAM_ROW} AS jetstream, count(*)::int AS n, count(*) OVER ()::int AS total_rows
       FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id WHERE ${eligibleWhere}
       GROUP BY 1, 2, 3, 4 ORDER BY n DESC, 1, 2, 3, 4 LIMIT ${MAX_TARGET_ROWS}`,
      params,
    ),
    sql.query<{ id: string; queue: string; order_sensitive: boolean; messages: number; entities: number; keyless: number; edited: number; critical: boolean; jetstream: boolean }>(
      `SELECT s.id::text, s.queue, s.order_sensitive, s.critical, ${JETSTREAM_ROW} AS jetstream, count(*)::int AS messages, count(DISTINCT d.entity_key)::int AS entities,
         (count(*) FILTER (WHERE d.entity_key IS NULL))::int AS keyless,
         (count(*) FILTER (WHERE EXISTS (SELECT 1 FROM message_revisions r WHERE r.dead_letter_id = d.id)))::int AS edited
       FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id WHERE ${eligibleWhere}
       GROUP BY s.id ORDER BY messages DESC`,
      params,
    ),
  ])

  const matched = reasons.rows.reduce((sum, r) => sum + r.n, 0)
  const replayable = reasons.rows.find((r) => r.reason === null)?.n ?? 0
  const excluded = EXCLUSIONS.flatMap((reason) => {
    const row = reasons.rows.find((r) => r.reason === reason)
    return row ? [{ reason, count: row.n, sampleIds: row.sample ?? [] }] : []
  })

  const warnings: string[] = []
  const refusedCount = excluded.find((e) => e.reason === 'target-refused')?.count ?? 0
  if (refusedCount > 0) {
    warnings.push(
      `${refusedCount} message${refusedCount === 1 ? '' : 's'} would go where replays never go (an amq.* exchange, Lazarus' control or hold exchange, the default exchange with a queue other than the one the message failed in, or, for JetStream, a server subject such as $JS.>, a reply inbox, or a custom subject not on the allow-list): left out.`,
    )
  }
  const targets = await describeTargets(routes.rows, target, settings, warnings)
  if (routes.rows.length > 0 && routes.rows[0].total_rows > routes.rows.length) {
    warnings.push(`The messages go to ${routes.rows[0].total_rows} different exchange and routing key combinations; only the ${routes.rows.length} most common were checked.`)
  }

  const orderSensitiveSources = sources.rows.filter((s) => s.order_sensitive)
  const pauseEntities = input.pauseEntities ?? orderSensitiveSources.length > 0
  const ratePerSecond = input.ratePerSecond ?? settings.defaultRate
  const fansOut = targets.filter((x) => x.fansOut)
  // JetStream targets bring their own warnings (jetstream-targets.ts): a stream with no consumer still stores the copy.
  const rabbitTargets = targets.filter((x) => x.broker !== 'jetstream')
  const missing = rabbitTargets.filter((x) => x.exists === false)
  const unroutable = rabbitTargets.filter((x) => x.queues !== null && x.queues === 0 && x.exists !== false)
  // Messages that can get anywhere. The default exchange to a key that names no queue (an empty key names none) routes
  // nowhere, whatever happens to bindings meanwhile: a plan whose every message goes to a missing exchange or such a
  // key cannot run. (A named exchange with nothing bound for the key is only warned about: a binding may be added.)
  const reachable = targets.filter((x) => x.exists !== false && (x.broker === 'jetstream' || !(x.exchange === '' && x.queues === 0))).reduce((sum, x) => sum + x.messages, 0)

  for (const x of fansOut.filter((y) => y.broker !== 'jetstream')) {
    warnings.push(
      `Exchange "${x.exchange}"${x.routingKey === null ? '' : ` with key "${x.routingKey}"`} routes to ${x.queues} queues (${x.queueNames.join(', ')}), more than the one each message failed in: consumers that already succeeded get the message again.${input.allowFanOut ? '' : ' Choose the failed queue as target, or allow the fan-out.'}`,
    )
  }
  for (const x of missing) warnings.push(`Exchange "${x.exchange}" does not exist: its ${x.messages} messages cannot be replayed and will stay dead.`)
  for (const x of unroutable) {
    warnings.push(`Nothing is bound to ${x.exchange === '' ? 'the default exchange' : `exchange "${x.exchange}"`}${x.routingKey === null ? '' : ` for key "${x.routingKey}"`}: its ${x.messages} messages will come back unroutable and stay dead.`)
  }
  for (const x of targets.filter((y) => y.alternateExchange !== null)) {
    warnings.push(`Exchange "${x.exchange}" has the alternate exchange "${x.alternateExchange}": messages it cannot route go there instead of being returned, so they count as replayed.`)
  }
  if (pauseEntities) {
    const keyless = sources.rows.reduce((sum, s) => sum + s.keyless, 0)
    if (keyless > 0) warnings.push(`${keyless} messages have no entity key: no pause protects their order.`)
    const unpausable = sources.rows.filter((s) => s.jetstream && s.entities > 0)
    if (unpausable.length > 0) {
      warnings.push(`${unpausable.map((s) => s.queue).join(', ')}: JetStream entities are not paused (no pause guard for JetStream yet), so newer messages may be overtaken by the replayed ones.`)
    }
  } else if (orderSensitiveSources.length > 0) {
    warnings.push(`${orderSensitiveSources.map((s) => s.queue).join(', ')} ${orderSensitiveSources.length === 1 ? 'is' : 'are'} order-sensitive and the entities will not be paused: newer messages may be overtaken by the replayed ones.`)
  }
  if (versions) warnings.push(...versionWarnings(versions, onlyNewest))
  if (replayable === 0) warnings.push(matched === 0 ? 'The selection matches no messages.' : 'None of the selected messages can be replayed.')

  const { staging, defaults: stagingDefaults, suggested: stagingSuggested } = await planStaging({ sql, input: input.staging, replayable, stagedFromMessages, sourceIds: sources.rows.map((s) => s.id) })
  const editedMessages = sources.rows.reduce((sum, s) => sum + s.edited, 0)
  const approval = approvalReasons(approvalPolicy, { replayable, editedMessages, target, criticalQueues: sources.rows.filter((s) => s.critical).map((s) => s.queue) })
  const canRun = replayable > 0 && (fansOut.length === 0 || input.allowFanOut === true) && (targets.length === 0 || reachable > 0)
  const plan: ReplayPlanDto = {
    matched,
    replayable,
    excluded,
    target,
    targets,
    entities: {
      count: sources.rows.reduce((sum, s) => sum + s.entities, 0),
      orderSensitive: orderSensitiveSources.reduce((sum, s) => sum + s.entities, 0),
      sources: sources.rows.map((s) => ({ id: s.id, queue: s.queue, orderSensitive: s.order_sensitive, messages: s.messages, entities: s.entities })),
    },
    pauseEntities,
    ratePerSecond,
    estimatedSeconds: Math.ceil(replayable / ratePerSecond),
    warnings,
    canRun,
    confirmCount: replayable >= largeJobMessages ? replayable : null,
    largeJobMessages,
    editedMessages,
    staging,
    stagingDefaults,
    stagingSuggested,
    stagedFromMessages,
    versions,
    onlyNewestPerEntity: onlyNewest,
    approval: { required: approval.length > 0, reasons: approval },
  }
  return { plan, target, eligibleWhere, exchangeSql: t.exchange, routingKeySql: t.routingKey, params, supersededIds: olderIds }
}

function versionWarnings(v: ReplayPlanVersionsDto, onlyNewest: boolean): string[] {
  const out: string[] = []
  const n = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`
  if (v.entitiesWithNewerStored > 0) {
    out.push(`${n(v.entitiesWithNewerStored, 'entity has', 'entities have')} a newer version among the stored dead letters than any selected: replaying may put an old version over a newer one.`)
  }
  if (v.older > 0 && !onlyNewest) {
    out.push(`${n(v.entitiesWithSeveral, 'entity has', 'entities have')} several versions in the selection (${n(v.older, 'older message')}): "only the newest per entity" would publish the newest alone and resolve the others as superseded.`)
  }
  if (v.unparsable > 0) out.push(`${n(v.unparsable, 'message has', 'messages have')} a version that does not parse (flag entity-version-unparsable): no version check applies to ${v.unparsable === 1 ? 'it' : 'them'}.`)
  return out
}

/** `jetstream`: the row's messages come from a JetStream source and `routing_key` is their subject. */
export type RouteRow = { exchange: string; routing_key: string; origin_queue: string | null; n: number; jetstream?: boolean }

/**
 * Per exchange and routing key: does the exchange exist, how many queues the key reaches, and is that a fan-out. Also
 * the re-check of a waiting job's targets when it starts (lib/server/engines/replay-executor/start-job.ts).
 */
export async function describeTargets(allRows: RouteRow[], target: ReplayTarget, settings: Pick<ReplaySettings, 'vhost' | 'nats' | 'leaseMs'>, warnings: string[]): Promise<ReplayPlanTargetDto[]> {
  const jetStream = await describeJetStreamTargets({
    routes: allRows.filter((r) => r.jetstream).map((r) => ({ subject: r.routing_key, n: r.n })), nats: settings.nats, leaseMs: settings.leaseMs, warnings,
  })
  const rows = allRows.filter((r) => !r.jetstream)
  return [...(await describeRabbitTargets(rows, target, settings.vhost, warnings)), ...jetStream]
}

async function describeRabbitTargets(rows: RouteRow[], target: ReplayTarget, vhost: string, warnings: string[]): Promise<ReplayPlanTargetDto[]> {
  if (rows.length === 0) return []
  let topology: Topology | null = null
  try {
    const defaultExchangeKeys = rows.filter((r) => r.exchange === '').map((r) => r.routing_key)
    topology = await loadTopology(vhost, rows.map((r) => r.exchange), defaultExchangeKeys)
  } catch (error) {
    log.warn('plan: management API unavailable', { error: (error as Error).message })
    warnings.push(`Could not check the broker's exchanges and bindings (${(error as Error).message}); routing is unknown.`)
  }
  const exchangeInfo = (name: string): { exists: boolean | null; alternateExchange: string | null } => {
    if (name === '') return { exists: true, alternateExchange: null }
    if (!topology?.exchanges.has(name)) return { exists: null, alternateExchange: null }
    const node = topology.exchanges.get(name) ?? null
    return { exists: node !== null, alternateExchange: node?.alternateExchange ?? null }
  }
  const nodes = new Map<string, ExchangeNode>()
  for (const [name, node] of topology?.exchanges ?? []) if (node) nodes.set(name, node)

  type Entry = ReplayPlanTargetDto & { queueSet: Set<string> | null }
  const byKey = new Map<string, Entry>()
  for (const row of rows) {
    const info = exchangeInfo(row.exchange)
    const route =
      topology && info.exists
        ? routeKey(nodes, row.exchange, row.routing_key, (q) => topology!.queues.get(q) ?? null)
        : { queues: info.exists === false ? [] : null, viaAlternate: false }
    const id = `${row.exchange}\u0000${row.routing_key}`
    const entry: Entry = byKey.get(id) ?? {
      exchange: row.exchange,
      routingKey: row.routing_key,
      messages: 0,
      exists: info.exists,
      queues: route.queues === null ? null : route.queues.length,
      queueNames: (route.queues ?? []).slice(0, MAX_QUEUE_NAMES),
      alternateExchange: info.alternateExchange,
      fansOut: false,
      broker: 'rabbitmq',
      queueSet: route.queues === null ? null : new Set(route.queues),
    }
    entry.messages += row.n
    // More than one queue for a key means consumers other than the failed one get the message again (the failed
    // queue through the default exchange never fans out).
    if (target.type !== 'queue' && entry.queueSet !== null && entry.queueSet.size > 1) entry.fansOut = true
    byKey.set(id, entry)
  }
  let entries = [...byKey.values()]
  if (entries.length > MAX_TARGETS_SHOWN) entries = collapseByExchange(entries)
  return entries.map(({ queueSet: _queueSet, ...dto }) => dto)
}

/** Too many routing keys to list: one entry per exchange, routing key null, the widest reach among its keys. */
function collapseByExchange<T extends ReplayPlanTargetDto>(entries: T[]): T[] {
  const byExchange = new Map<string, T>()
  for (const e of entries) {
    const seen = byExchange.get(e.exchange)
    if (!seen) {
      byExchange.set(e.exchange, { ...e, routingKey: null })
      continue
    }
    seen.messages += e.messages
    seen.queues = seen.queues === null || e.queues === null ? null : Math.max(seen.queues, e.queues)
    seen.queueNames = [...new Set([...seen.queueNames, ...e.queueNames])].slice(0, MAX_QUEUE_NAMES)
    seen.fansOut ||= e.fansOut
  }
  return [...byExchange.values()]
}
