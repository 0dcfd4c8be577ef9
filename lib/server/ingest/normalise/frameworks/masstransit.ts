import 'server-only'
import { parseIsoDate } from '../dates'
import { asInteger, getField } from '../header-values'
import { analyseStack } from '../stack-trace'
import {
  emptyFacts,
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
  const type = headerText(ctx, 'MT-Fault-ExceptionType')
  const message = headerText(ctx, 'MT-Fault-Message')
  const stack = headerText(ctx, 'MT-Fault-StackTrace')
  facts.reason = headerText(ctx, 'MT-Reason')

  if (type !== null || message !== null || stack !== null) {
    // MT-Fault-StackTrace holds frames only; the type is already the base (innermost) exception.
    const analysis = analyseStack(stack, { hint: 'dotnet' })
    facts.error = {
      type: type ?? analysis.root?.type ?? null,
      message: message ?? analysis.root?.message ?? null,
      stack,
      frames: analysis.frames,
      rootMissing: false,
      extraParts: [],
      sources: {
        type: type !== null ? 'MT-Fault-ExceptionType' : undefined,
        message: message !== null ? 'MT-Fault-Message' : undefined,
        stack: stack !== null ? 'MT-Fault-StackTrace' : undefined,
      },
    }
    const retries = getField(ctx.headers, 'MT-Fault-RetryCount')
    const retryCount = retries === undefined || retries === null ? 0 : asInteger(retries)
    if (retryCount === null || retryCount < 0) facts.flags.push('header-malformed:MT-Fault-RetryCount')
    else facts.attempts = { value: retryCount + 1, source: 'MT-Fault-RetryCount + 1' }
  }

  const timestamp = headerText(ctx, 'MT-Fault-Timestamp')
  const failedAt = timestamp === null ? null : parseIsoDate(timestamp)
  if (timestamp !== null && failedAt === null) facts.flags.push('header-malformed:MT-Fault-Timestamp')
  facts.failedAt = sourced(failedAt, 'MT-Fault-Timestamp')

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
