import 'server-only'
import type { DeliveryView } from '../../types'
import type { DeliveryBody } from '../delivery-body'
import type { EntityKeySource } from '../entity-key'
import { asNonBlankText, asText, getField } from '../header-values'
import type { Frame } from '../stack-frames'
import { analyseStack } from '../stack-trace'

/**
 * A derived value and the header, property or rule it came from
 * (docs/framework-headers.md#where-each-value-came-from).
 */
export type Sourced<T> = { value: T; source: string }

export type ErrorFacts = {
  /** Root exception type (docs/framework-headers.md#root-exception-type). */
  type: string | null
  message: string | null
  /** Raw trace (or error details) for display. */
  stack: string | null
  /** The root exception's frames, throw site first. */
  frames: Frame[]
  rootMissing: boolean
  /** Extra signature parts for degraded inputs. */
  extraParts: string[]
  sources: { type?: string; message?: string; stack?: string }
}

export type OriginFacts = {
  exchange?: Sourced<string>
  routingKeys?: Sourced<string[]>
  queue?: Sourced<string>
}

export type FrameworkFacts = {
  error: ErrorFacts | null
  origin: OriginFacts
  attempts: Sourced<number> | null
  failedAt: Sourced<Date> | null
  service: Sourced<string> | null
  serviceVersion: Sourced<string> | null
  messageType: string | null
  /** A framework's own failure reason when it is not a broker dead-lettering (MassTransit's MT-Reason). */
  reason: string | null
  /** Where entity-key rules should look when the business message is wrapped (EasyNetQ). */
  entitySource: Partial<EntityKeySource> | null
  flags: string[]
}

/** A delivery whose parts have already been checked to be objects and a Buffer. */
export type FrameworkContext = {
  delivery: Pick<DeliveryView, 'queue' | 'exchange' | 'routingKey'>
  headers: Record<string, unknown>
  properties: Record<string, unknown>
  body: DeliveryBody
  now: Date
}

export function emptyFacts(): FrameworkFacts {
  return {
    error: null,
    origin: {},
    attempts: null,
    failedAt: null,
    service: null,
    serviceVersion: null,
    messageType: null,
    reason: null,
    entitySource: null,
    flags: [],
  }
}

export function headerText(ctx: FrameworkContext, name: string): string | null {
  return asNonBlankText(getField(ctx.headers, name))
}

/** Text that may legitimately be empty, such as the default exchange "". */
export function headerRawText(ctx: FrameworkContext, name: string): string | null {
  return asText(getField(ctx.headers, name))
}

export function propertyText(ctx: FrameworkContext, name: string): string | null {
  return asNonBlankText(getField(ctx.properties, name))
}

export function sourced<T>(value: T | null | undefined, source: string): Sourced<T> | null {
  return value === null || value === undefined ? null : { value, source }
}

/** The first non-null sourced value. */
export function firstOf<T>(...candidates: (Sourced<T> | null)[]): Sourced<T> | null {
  return candidates.find((c) => c !== null) ?? null
}

/** "Acme.Messages.PlaceOrder, Acme.Messages, Version=1.0.0.0" → "Acme.Messages.PlaceOrder". */
export function stripAssembly(typeName: string): string {
  return typeName.split(';')[0].split(',')[0].trim()
}

/** The last path segment of an endpoint URI such as `rabbitmq://host/vhost/queue?durable=true`. */
export function lastPathSegment(uri: string): string | null {
  try {
    const segments = new URL(uri).pathname.split('/').filter(Boolean)
    const last = segments.at(-1)
    return last ? decodeURIComponent(last) : null
  } catch {
    return null
  }
}

/**
 * The failure time a framework writes in `header`, read with that framework's own format. A value that does not parse
 * is flagged and left out, never guessed.
 */
export function failedAtFromHeader(ctx: FrameworkContext, facts: FrameworkFacts, header: string, parse: (text: string) => Date | null): void {
  const text = headerText(ctx, header)
  const failedAt = text === null ? null : parse(text)
  if (text !== null && failedAt === null) facts.flags.push(`header-malformed:${header}`)
  facts.failedAt = sourced(failedAt, header)
}

/**
 * Error facts from three headers naming the exception's type, its message and a frames-only .NET stack (MassTransit,
 * Wolverine): the headers win, the stack fills in what they lack. Null when none of the three is there.
 */
export function errorFromDotnetHeaders(
  ctx: FrameworkContext,
  headers: { type: string; message: string; stack: string },
  rootMissing: (type: string | null) => boolean = () => false,
): ErrorFacts | null {
  const type = headerText(ctx, headers.type)
  const message = headerText(ctx, headers.message)
  const stack = headerText(ctx, headers.stack)
  if (type === null && message === null && stack === null) return null
  const analysis = analyseStack(stack, { hint: 'dotnet' })
  return {
    type: type ?? analysis.root?.type ?? null,
    message: message ?? analysis.root?.message ?? null,
    stack,
    frames: analysis.frames,
    rootMissing: rootMissing(type),
    extraParts: [],
    sources: {
      type: type !== null ? headers.type : undefined,
      message: message !== null ? headers.message : undefined,
      stack: stack !== null ? headers.stack : undefined,
    },
  }
}
