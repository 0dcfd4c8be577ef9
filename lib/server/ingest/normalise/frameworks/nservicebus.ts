import 'server-only'
import { parseNServiceBusTime } from '../dates'
import { analyseStack } from '../stack-trace'
import {
  emptyFacts,
  failedAtFromHeader,
  firstOf,
  headerText,
  propertyText,
  sourced,
  stripAssembly,
  type FrameworkContext,
  type FrameworkFacts,
} from './facts'

/** NServiceBus error queue (docs/framework-headers.md#nservicebus). */
export function extractNServiceBus(ctx: FrameworkContext): FrameworkFacts {
  const facts = emptyFacts()
  const outerType = headerText(ctx, 'NServiceBus.ExceptionInfo.ExceptionType')
  const innerType = headerText(ctx, 'NServiceBus.ExceptionInfo.InnerExceptionType')
  const message = headerText(ctx, 'NServiceBus.ExceptionInfo.Message')
  const stack = headerText(ctx, 'NServiceBus.ExceptionInfo.StackTrace')

  if (outerType !== null || message !== null || stack !== null) {
    // StackTrace is e.ToString(): type, message, inner exceptions and frames.
    const analysis = analyseStack(stack, { hint: 'dotnet', knownMessage: message })
    const innermost = analysis.chain.length > 1 ? analysis.root : null
    const type = innermost?.type ?? innerType ?? outerType ?? analysis.root?.type ?? null
    const typeSource = innermost
      ? 'NServiceBus.ExceptionInfo.StackTrace (innermost)'
      : innerType
        ? 'NServiceBus.ExceptionInfo.InnerExceptionType'
        : outerType
          ? 'NServiceBus.ExceptionInfo.ExceptionType'
          : 'NServiceBus.ExceptionInfo.StackTrace'
    facts.error = {
      type,
      // The Message header is the outer exception's; prefer the root's own message when the trace has it.
      message: innermost?.message ?? message ?? analysis.root?.message ?? null,
      stack,
      frames: analysis.frames,
      rootMissing: analysis.rootMissing,
      extraParts: [],
      sources: {
        type: typeSource,
        message: innermost?.message
          ? 'NServiceBus.ExceptionInfo.StackTrace (innermost)'
          : 'NServiceBus.ExceptionInfo.Message',
        stack: stack !== null ? 'NServiceBus.ExceptionInfo.StackTrace' : undefined,
      },
    }
  }

  failedAtFromHeader(ctx, facts, 'NServiceBus.TimeOfFailure', parseNServiceBusTime)

  const failedQ = headerText(ctx, 'NServiceBus.FailedQ')
  // MSMQ-style addresses carry "@machine"; the RabbitMQ transport uses the bare queue name.
  if (failedQ !== null) facts.origin.queue = { value: failedQ.split('@')[0], source: 'NServiceBus.FailedQ' }

  facts.service = firstOf(
    sourced(headerText(ctx, 'NServiceBus.ProcessingEndpoint'), 'NServiceBus.ProcessingEndpoint'),
    sourced(headerText(ctx, '$.diagnostics.hostdisplayname'), '$.diagnostics.hostdisplayname'),
    sourced(headerText(ctx, 'NServiceBus.ProcessingMachine'), 'NServiceBus.ProcessingMachine'),
  )
  const enclosed = headerText(ctx, 'NServiceBus.EnclosedMessageTypes')
  facts.messageType = (enclosed && stripAssembly(enclosed)) || propertyText(ctx, 'type')
  return facts
}
