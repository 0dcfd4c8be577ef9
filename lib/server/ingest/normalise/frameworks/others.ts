import 'server-only'
import { asInteger, getField } from '../header-values'
import { emptyFacts, headerText, propertyText, type FrameworkContext, type FrameworkFacts } from './facts'

function countPlusOne(ctx: FrameworkContext, facts: FrameworkFacts, header: string): void {
  const raw = getField(ctx.headers, header)
  if (raw === undefined || raw === null) return
  const n = asInteger(raw)
  if (n === null || n < 0) facts.flags.push(`header-malformed:${header}`)
  else facts.attempts = { value: n + 1, source: `${header} + 1` }
}

/**
 * Celery dead-letters only through Reject; the exception stays in the result backend
 * (docs/framework-headers.md#celery-and-brighter).
 */
export function extractCelery(ctx: FrameworkContext): FrameworkFacts {
  const facts = emptyFacts()
  countPlusOne(ctx, facts, 'retries')
  facts.messageType = headerText(ctx, 'task') ?? propertyText(ctx, 'type')
  return facts
}

/**
 * Brighter rejects to the broker DLX; only its requeue counter and topic travel along
 * (docs/framework-headers.md#celery-and-brighter).
 */
export function extractBrighter(ctx: FrameworkContext): FrameworkFacts {
  const facts = emptyFacts()
  countPlusOne(ctx, facts, 'HandledCount')
  // Brighter's adapter puts the body content type into the AMQP `type` property, so the topic names the message.
  facts.messageType = headerText(ctx, 'Topic')
  return facts
}

/** Plain DLX, Lazarus-only and unknown deliveries: everything comes from x-death and Lazarus' headers. */
export function extractNothing(ctx: FrameworkContext): FrameworkFacts {
  const facts = emptyFacts()
  facts.messageType = propertyText(ctx, 'type')
  return facts
}
