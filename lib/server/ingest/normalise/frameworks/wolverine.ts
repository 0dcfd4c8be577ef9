import 'server-only'
import { parseUnixMillis } from '../dates'
import { asInteger, getField } from '../header-values'
import { isWrapperType } from '../stack-trace'
import {
  emptyFacts,
  errorFromDotnetHeaders,
  failedAtFromHeader,
  headerText,
  propertyText,
  type FrameworkContext,
  type FrameworkFacts,
  type OriginFacts,
} from './facts'

/** Wolverine endpoint URIs: rabbitmq://queue/<q>, rabbitmq://exchange/<x>[/routing/<key>], rabbitmq://topic/<x>/<key>. */
export function originFromWolverineUri(uri: string): OriginFacts {
  const source = 'original-destination'
  try {
    const url = new URL(uri)
    const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent)
    if (!segments[0]) return {}
    switch (url.hostname) {
      case 'queue':
        return { queue: { value: segments[0], source } }
      case 'exchange': {
        const key = segments[1] === 'routing' ? segments[2] : undefined
        return { exchange: { value: segments[0], source }, ...(key ? { routingKeys: { value: [key], source } } : {}) }
      }
      case 'topic': {
        const key = segments.slice(1).join('/')
        return { exchange: { value: segments[0], source }, ...(key ? { routingKeys: { value: [key], source } } : {}) }
      }
      default:
        return {}
    }
  } catch {
    return {}
  }
}

/** Wolverine InteropFriendly / enhanced dead lettering (docs/framework-headers.md#wolverine). */
export function extractWolverine(ctx: FrameworkContext): FrameworkFacts {
  const facts = emptyFacts()
  // exception-stack is .StackTrace: frames only, of the outer exception. Only the outer type is sent; a wrapper hides
  // the real failure, so its message must be hashed.
  facts.error = errorFromDotnetHeaders(
    ctx,
    { type: 'exception-type', message: 'exception-message', stack: 'exception-stack' },
    (type) => type !== null && isWrapperType(type),
  )
  failedAtFromHeader(ctx, facts, 'failed-at', parseUnixMillis)

  const destination = headerText(ctx, 'original-destination')
  if (destination !== null) facts.origin = originFromWolverineUri(destination)

  const attempts = getField(ctx.headers, 'attempts')
  if (attempts !== undefined) {
    const n = asInteger(attempts)
    if (n === null || n < 0) facts.flags.push('header-malformed:attempts')
    else facts.attempts = { value: n, source: 'attempts' }
  }
  facts.messageType = propertyText(ctx, 'type')
  return facts
}
