import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { exchangePatternMatches } from '@/lib/shared/schemas/replay-targets'
import type { ReplayTarget } from '@/lib/shared/schemas/replay'
import type { ReplaySettings } from './replay-settings'
import { storedCustomTargetPatterns } from './replay-target-settings'
import { reservedSubjectSql } from './jetstream-publish'

/**
 * Where a replay may publish. Whoever can start a replay (or store a message in a DLQ: its origin comes from headers
 * that publishers write) must not be able to aim Lazarus at the broker's own exchanges, at Lazarus' control exchange
 * (a forged pause event with a huge version would blind every guard) or hold exchange (forged held messages), or,
 * through the default exchange, at any queue they name.
 */
export type TargetRules = {
  /** Lazarus' control and hold exchanges. */
  reservedExchanges: string[]
  /** The hold queue: reachable through the default exchange under its own name. */
  reservedQueues: string[]
  /** Exchanges custom targets may name: the stored allow-list and LAZARUS_REPLAY_TARGET_PATTERNS. */
  customPatterns: string[]
}

export async function loadTargetRules({ db, settings }: { db: Db; settings: ReplaySettings }): Promise<TargetRules> {
  const stored = await storedCustomTargetPatterns({ db })
  return {
    reservedExchanges: [settings.controlExchange, settings.holdQueue],
    reservedQueues: [settings.holdQueue],
    customPatterns: [...new Set([...stored, ...settings.environmentTargetPatterns])],
  }
}

/** Why Lazarus never publishes to this exchange, or null. */
export function reservedExchangeReason(exchange: string, rules: TargetRules): string | null {
  // amq.rabbitmq.trace and .log are the broker's; amq.direct and friends are shared by every application on the vhost.
  if (exchange.startsWith('amq.')) return `"${exchange}" is one of RabbitMQ's own exchanges (amq.*)`
  if (rules.reservedExchanges.includes(exchange)) return `"${exchange}" is Lazarus' own ${exchange === rules.reservedExchanges[0] ? 'control' : 'hold'} exchange`
  return null
}

const SETTINGS_HINT = 'an admin lists them (patterns such as orders.* or billing.retry) with PUT /api/settings/replay-targets or LAZARUS_REPLAY_TARGET_PATTERNS'

/**
 * A custom target is refused outright (422, dry runs too, so a dry run cannot be used to read the bindings of
 * arbitrary exchanges): amq.* and Lazarus' exchanges always; any other named exchange unless the allow-list matches
 * it. The default exchange ('') is left to the per-message rule of `refusedTargetSql`: it may only reach each
 * message's own failed queue, which is what the `queue` target does without any list.
 */
export function assertCustomTargetAllowed(target: ReplayTarget, rules: TargetRules): void {
  if (target.type !== 'custom') return
  const reserved = reservedExchangeReason(target.exchange, rules)
  if (reserved) {
    throw new AppError('unprocessable', `Replays never go to ${reserved}.`, { target, refused: 'reserved-exchange' })
  }
  if (target.exchange === '') return
  if (rules.customPatterns.length === 0) {
    throw new AppError('unprocessable', `Custom replay targets are not allowed: no exchange is on the allow-list; ${SETTINGS_HINT}.`, {
      target,
      refused: 'not-allow-listed',
      allowedPatterns: [],
    })
  }
  if (!rules.customPatterns.some((p) => exchangePatternMatches(p, target.exchange))) {
    throw new AppError(
      'unprocessable',
      `Exchange "${target.exchange}" is not an allowed custom replay target (allowed: ${rules.customPatterns.join(', ')}); ${SETTINGS_HINT}.`,
      { target, refused: 'not-allow-listed', allowedPatterns: rules.customPatterns },
    )
  }
}

/**
 * Per message (on dead_letters `d`): true when the exchange and routing key the replay would use are ones Lazarus never
 * publishes to. This also covers the `source` target, whose exchange and key come from the stored message: amq.*,
 * Lazarus' exchanges, and the default exchange with a key other than the queue the message failed in (or the hold
 * queue). Such messages are left out of the plan as 'target-refused'.
 */
export function refusedTargetSql(exchangeSql: string, routingKeySql: string, rules: TargetRules, params: unknown[]): string {
  params.push(rules.reservedExchanges, rules.reservedQueues)
  const [exchanges, queues] = [`$${params.length - 1}::text[]`, `$${params.length}::text[]`]
  return `coalesce(left(${exchangeSql}, 4) = 'amq.' OR ${exchangeSql} = ANY(${exchanges})
    OR (${exchangeSql} = '' AND (${routingKeySql} IS DISTINCT FROM d.origin_queue OR ${routingKeySql} = ANY(${queues}))), false)`
}

/**
 * Per JetStream message (docs/jetstream.md#replay): true when its copy would go to a subject Lazarus never publishes to
 * (the server's `$` subjects, reply inboxes, a subject with wildcards) or, for a custom target, a subject no allow-list
 * pattern names or a target with an exchange, which JetStream does not have. Such messages are left out as
 * 'target-refused'.
 */
export function refusedSubjectSql(subjectSql: string, target: ReplayTarget, rules: TargetRules, params: unknown[]): string {
  const customRefused = target.type === 'custom' && (target.exchange !== '' || !rules.customPatterns.some((p) => exchangePatternMatches(p, target.routingKey)))
  params.push(customRefused)
  return `(${reservedSubjectSql(subjectSql)} OR $${params.length}::bool)`
}
