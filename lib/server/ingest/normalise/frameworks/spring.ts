import 'server-only'
import { asInteger, getField } from '../header-values'
import { analyseStack } from '../stack-trace'
import {
  emptyFacts,
  headerRawText,
  headerText,
  propertyText,
  sourced,
  type FrameworkContext,
  type FrameworkFacts,
} from './facts'

/**
 * Spring AMQP RepublishMessageRecoverer and the Spring Cloud Stream binder (docs/framework-headers.md#spring-amqp,
 * #spring-cloud-stream).
 */
export function extractSpring(ctx: FrameworkContext, flavour: 'spring-amqp' | 'spring-cloud-stream'): FrameworkFacts {
  const facts = emptyFacts()
  // The recoverer stores the cause's message (the user exception inside ListenerExecutionFailedException).
  const message = headerText(ctx, 'x-exception-message')
  const stack = headerText(ctx, 'x-exception-stacktrace')
  const exchange = headerRawText(ctx, 'x-original-exchange')
  const routingKey = headerRawText(ctx, 'x-original-routingKey')

  if (message !== null || stack !== null) {
    const analysis = analyseStack(stack, { hint: 'java', knownMessage: message })
    facts.error = {
      type: analysis.root?.type ?? null,
      message: message ?? analysis.root?.message ?? null,
      stack,
      frames: analysis.frames,
      rootMissing: analysis.rootMissing,
      // Spring AMQP ≥ 4.0.5 sends no trace by default; the routing key keeps unrelated failures apart
      // (docs/framework-headers.md#degraded-inputs).
      extraParts: stack === null ? [routingKey ?? ''] : [],
      sources: {
        type: analysis.root ? 'x-exception-stacktrace' : undefined,
        message: message !== null ? 'x-exception-message' : 'x-exception-stacktrace',
        stack: stack !== null ? 'x-exception-stacktrace' : undefined,
      },
    }
  }

  if (exchange !== null) facts.origin.exchange = { value: exchange, source: 'x-original-exchange' }
  if (routingKey !== null) facts.origin.routingKeys = { value: [routingKey], source: 'x-original-routingKey' }
  const queue = originalQueue(ctx, flavour, exchange, routingKey)
  if (queue) facts.origin.queue = queue

  const retryCount = getField(ctx.headers, 'retry-count')
  if (retryCount !== undefined) {
    const n = asInteger(retryCount)
    if (n === null || n < 0) facts.flags.push('header-malformed:retry-count')
    else facts.attempts = { value: n, source: 'retry-count' }
  }
  facts.messageType = headerText(ctx, '__TypeId__') ?? propertyText(ctx, 'type')
  return facts
}

/** Neither variant records the failed queue; these conventions usually reveal it. */
function originalQueue(
  ctx: FrameworkContext,
  flavour: 'spring-amqp' | 'spring-cloud-stream',
  exchange: string | null,
  routingKey: string | null,
): { value: string; source: string } | null {
  if (flavour === 'spring-cloud-stream') {
    if (ctx.delivery.queue.endsWith('.dlq') && ctx.delivery.queue.length > 4) {
      return { value: ctx.delivery.queue.slice(0, -4), source: 'dlq-name (<destination>.<group>.dlq)' }
    }
    return sourced(ctx.delivery.routingKey || null, 'dlq-routing-key (consumer queue)')
  }
  // A publish to the default exchange is addressed by queue name.
  if (exchange === '' && routingKey) return { value: routingKey, source: 'x-original-routingKey (default exchange)' }
  return null
}
