import 'server-only'
import { parseIsoDate } from '../dates'
import { asInteger, getField } from '../header-values'
import {
  emptyFacts,
  errorFromDotnetHeaders,
  failedAtFromHeader,
  firstOf,
  headerText,
  lastPathSegment,
  propertyText,
  sourced,
  type FrameworkContext,
  type FrameworkFacts,
} from './facts'

/** MassTransit `<queue>_error` / `<queue>_skipped` (docs/framework-headers.md#masstransit). */
export function extractMassTransit(ctx: FrameworkContext): FrameworkFacts {
  const facts = emptyFacts()
  facts.reason = headerText(ctx, 'MT-Reason')

  // MT-Fault-StackTrace holds frames only; the type is already the base (innermost) exception.
  facts.error = errorFromDotnetHeaders(ctx, { type: 'MT-Fault-ExceptionType', message: 'MT-Fault-Message', stack: 'MT-Fault-StackTrace' })
  if (facts.error) {
    const retries = getField(ctx.headers, 'MT-Fault-RetryCount')
    const retryCount = retries === undefined || retries === null ? 0 : asInteger(retries)
    if (retryCount === null || retryCount < 0) facts.flags.push('header-malformed:MT-Fault-RetryCount')
    else facts.attempts = { value: retryCount + 1, source: 'MT-Fault-RetryCount + 1' }
  }

  failedAtFromHeader(ctx, facts, 'MT-Fault-Timestamp', parseIsoDate)

  const inputAddress = headerText(ctx, 'MT-Fault-InputAddress')
  const queue = firstOf(
    sourced(inputAddress === null ? null : lastPathSegment(inputAddress), 'MT-Fault-InputAddress'),
    sourced(/^(.+)_(?:error|skipped)$/.exec(ctx.delivery.queue)?.[1], 'dlq-name (<queue>_error)'),
  )
  if (queue) {
    facts.origin.queue = queue
    // Every MassTransit receive endpoint has a fanout exchange named like its queue.
    facts.origin.exchange = { value: queue.value, source: 'MassTransit endpoint exchange convention' }
  }
  // The error transport republishes with the original routing key.
  if (ctx.delivery.routingKey) {
    facts.origin.routingKeys = { value: [ctx.delivery.routingKey], source: 'delivery routing key' }
  }

  facts.service = firstOf(
    sourced(headerText(ctx, 'MT-Host-Assembly'), 'MT-Host-Assembly'),
    sourced(headerText(ctx, 'MT-Host-ProcessName'), 'MT-Host-ProcessName'),
    sourced(headerText(ctx, 'MT-Host-MachineName'), 'MT-Host-MachineName'),
  )
  facts.serviceVersion = sourced(headerText(ctx, 'MT-Host-AssemblyVersion'), 'MT-Host-AssemblyVersion')
  facts.messageType = headerText(ctx, 'MT-Fault-MessageType') ?? propertyText(ctx, 'type')
  return facts
}
