import 'server-only'
import { createHash } from 'node:crypto'
import { normaliseMessage } from './message-pattern'
import { firstInAppFrames, type Frame, type FrameOptions } from './stack-frames'
import { lastSegment, withoutAssembly } from './type-names'

export const SIGNATURE_VERSION = 'v1'
export const MAX_TITLE_LENGTH = 120
const MAX_HASHED_FRAMES = 3
export const NO_ERROR_METADATA = 'no error metadata'

export type SignatureInput = {
  /** Root exception type (docs/framework-headers.md#root-exception-type), exactly as written. */
  errorType: string | null
  errorMessage: string | null
  /** The root exception's frames, throw site first. */
  frames: readonly Frame[]
  /** The trace was cut before the root cause: hash the message too (docs/framework-headers.md#root-exception-type). */
  rootMissing?: boolean
  /** Extra grouping parts for degraded inputs, e.g. Spring's x-original-routingKey when there is no stack. */
  extraParts?: readonly string[]
  /** Used only when there is no error metadata at all (docs/framework-headers.md#degraded-inputs). */
  fallback: { queue: string | null; reason: string | null; messageType: string | null }
  frameOptions?: FrameOptions
}

export type ErrorSignature = {
  signature: string
  title: string
  messagePattern: string | null
  /** The frames hashed (`module.function`, throw site first); empty when none were. */
  frames: string[]
  /** What was hashed, for debugging and tests. */
  parts: string[]
}

export function fingerprint(parts: readonly string[]): string {
  const digest = createHash('sha256').update(parts.join('\n'), 'utf8').digest('hex')
  return `${SIGNATURE_VERSION}:${digest.slice(0, 16)}`
}

/** `com.acme.InvalidOrderException` → `InvalidOrderException`; also .NET `Outer+Inner` and PHP namespaces. */
export function shortTypeName(type: string): string {
  // Rebus and NServiceBus write assembly-qualified names: "Ns.Type, Assembly".
  // A generic's brackets hold commas of their own ("List`1[[Ns.T, Asm]]"): such a name is kept whole.
  const name = type.includes('[') ? type.trim() : withoutAssembly(type)
  return lastSegment(name, '.\\+') ?? type
}

export function truncateTitle(title: string): string {
  return title.length <= MAX_TITLE_LENGTH ? title : `${title.slice(0, MAX_TITLE_LENGTH - 1)}…`
}

/** Computes the error-group key and title (docs/framework-headers.md#error-signature). Pure and deterministic. */
export function computeErrorSignature(input: SignatureInput): ErrorSignature {
  const messagePattern = normaliseMessage(input.errorMessage)
  const type = input.errorType?.trim() || null

  if (!type && !messagePattern && input.frames.length === 0) {
    const { queue, reason, messageType } = input.fallback
    const parts = [`<${NO_ERROR_METADATA}>`, queue ?? '', reason ?? '', messageType ?? '']
    const about = messageType ? ` (${shortTypeName(messageType)})` : ''
    return {
      signature: fingerprint(parts),
      title: truncateTitle(`${NO_ERROR_METADATA}: ${reason ?? 'unknown reason'} in ${queue ?? 'unknown queue'}${about}`),
      messagePattern: null,
      frames: [],
      parts,
    }
  }

  const inApp = firstInAppFrames(input.frames, MAX_HASHED_FRAMES, input.frameOptions)
  // No in-app frame: the top frame still separates failures (ServiceControl's behaviour).
  const frames = inApp.length > 0 ? inApp : input.frames.slice(0, 1)
  const parts = [type ?? '<unknown>']
  if (frames.length === 0 || input.rootMissing) parts.push(messagePattern ?? '')
  parts.push(...frames.map((f) => f.fn), ...(input.extraParts ?? []))

  const shortType = type ? shortTypeName(type) : null
  const title = shortType
    ? messagePattern
      ? `${shortType}: ${messagePattern}`
      : shortType
    : (messagePattern ?? 'Unknown error')
  return { signature: fingerprint(parts), title: truncateTitle(title), messagePattern, frames: frames.map((f) => f.fn), parts }
}
