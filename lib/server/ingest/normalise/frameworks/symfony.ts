import 'server-only'
import { MAX_PARSED_BODY_BYTES, parseJsonText } from '../delivery-body'
import { parseIsoDate } from '../dates'
import { asInteger, asNonBlankText, asRecord, asText, getField, headerNamesWithPrefix } from '../header-values'
import { analyseStack, isWrapperType } from '../stack-trace'
import { emptyFacts, headerText, propertyText, sourced, type FrameworkContext, type FrameworkFacts } from './facts'

const STAMP_PREFIX = 'X-Message-Stamp-'
const MAX_SERIALIZED_STRING = 1024 * 1024

/** Every stamp of one class: each `X-Message-Stamp-<FQCN>` header is a JSON array. */
function stamps(ctx: FrameworkContext, classSuffix: string): Record<string, unknown>[] {
  return headerNamesWithPrefix(ctx.headers, STAMP_PREFIX)
    .filter((name) => name.endsWith(classSuffix))
    .flatMap((name) => {
      const parsed = parseJsonText(asText(getField(ctx.headers, name)))
      const list = Array.isArray(parsed?.value) ? parsed.value : []
      return list.flatMap((item) => {
        const rec = asRecord(item)
        return rec ? [rec] : []
      })
    })
}

/**
 * Reads a string property out of PhpSerializer output (`addslashes(serialize($envelope))`):
 * `…exceptionClass\";s:24:\"App\\Exception\\BadOrder\";`. The declared length counts bytes of the
 * unescaped string, so the escapes are undone while counting. Stamps are appended, so with `last` the
 * newest one is read; otherwise the first occurrence at or after `after`.
 */
export function readPhpSerializedString(
  text: string,
  property: string,
  { after = 0, last = false }: { after?: number; last?: boolean } = {},
): { value: string; end: number } | null {
  const escaped = property.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const pattern = new RegExp(`${escaped}\\\\?";s:(\\d{1,9}):\\\\?"`, 'g')
  pattern.lastIndex = after
  let match = pattern.exec(text)
  for (let m = match; last && m; m = pattern.exec(text)) match = m
  if (!match) return null
  const length = Math.min(Number(match[1]), MAX_SERIALIZED_STRING)
  const escapes: Record<string, string> = { '\\': '\\', '"': '"', "'": "'", '0': '\0' }
  let i = match.index + match[0].length
  let bytes = 0
  let value = ''
  while (bytes < length && i < text.length) {
    let ch = text[i]
    if (ch === '\\' && i + 1 < text.length && Object.hasOwn(escapes, text[i + 1])) {
      ch = escapes[text[i + 1]]
      i += 2
    } else {
      const code = text.codePointAt(i) ?? 0
      ch = String.fromCodePoint(code)
      i += ch.length
    }
    value += ch
    bytes += Buffer.byteLength(ch, 'utf8')
  }
  return { value, end: i }
}

function fromJsonStamps(ctx: FrameworkContext, facts: FrameworkFacts): boolean {
  const errors = stamps(ctx, 'ErrorDetailsStamp')
  const latest = errors.at(-1)
  if (latest) {
    let type = asNonBlankText(getField(latest, 'exceptionClass'))
    let message = asNonBlankText(getField(latest, 'exceptionMessage'))
    let flat = asRecord(getField(latest, 'flattenException'))
    // Older Symfony versions stored HandlerFailedException itself; the handler's exception is its previous.
    const previous = asRecord(getField(flat, 'previous'))
    if (type !== null && isWrapperType(type) && previous) {
      type = asNonBlankText(getField(previous, 'class')) ?? type
      message = asNonBlankText(getField(previous, 'message')) ?? message
      flat = previous
    }
    const stack = asNonBlankText(getField(flat, 'trace_as_string'))
    const analysis = analyseStack(stack, { hint: 'php' })
    facts.error = {
      type,
      message,
      stack,
      frames: analysis.frames,
      rootMissing: false,
      extraParts: [],
      sources: {
        type: 'ErrorDetailsStamp.exceptionClass',
        message: 'ErrorDetailsStamp.exceptionMessage',
        stack: stack ? 'ErrorDetailsStamp.flattenException.trace_as_string' : undefined,
      },
    }
  }

  // The failure listener appends RedeliveryStamp(0), so the highest retryCount is the real one.
  const redeliveries = stamps(ctx, 'RedeliveryStamp')
  const retryCounts = redeliveries.flatMap((s) => {
    const n = asInteger(getField(s, 'retryCount'))
    return n !== null && n >= 0 ? [n] : []
  })
  if (retryCounts.length) facts.attempts = { value: Math.max(...retryCounts) + 1, source: 'RedeliveryStamp.retryCount + 1' }
  const times = redeliveries.flatMap((s) => {
    const t = asNonBlankText(getField(s, 'redeliveredAt'))
    const d = t === null ? null : parseIsoDate(t)
    return d ? [d] : []
  })
  const latestTime = times.reduce<Date | null>((max, t) => (!max || t > max ? t : max), null)
  facts.failedAt = sourced(latestTime, 'RedeliveryStamp.redeliveredAt')
  return latest !== undefined || redeliveries.length > 0
}

/** PhpSerializer keeps every stamp inside the body; pull out what a regex can reach safely. */
function fromSerializedBody(ctx: FrameworkContext, facts: FrameworkFacts): void {
  let text = ctx.body.bytes.subarray(0, MAX_PARSED_BODY_BYTES).toString('latin1')
  if (!text.includes('Envelope')) text = Buffer.from(text, 'base64').toString('latin1')
  // Serialized strings count UTF-8 bytes; re-read as UTF-8 now that the format is confirmed.
  text = Buffer.from(text, 'latin1').toString('utf8')
  const type = readPhpSerializedString(text, 'exceptionClass', { last: true })
  if (!type) return
  const message = readPhpSerializedString(text, 'exceptionMessage', { after: type.end })
  const trace = readPhpSerializedString(text, 'traceAsString', { after: type.end })
  const stack = trace?.value.trim() ? trace.value : null
  facts.error = {
    type: type.value.trim() || null,
    message: message?.value.trim() ? message.value : null,
    stack,
    frames: analyseStack(stack, { hint: 'php' }).frames,
    rootMissing: false,
    extraParts: [],
    sources: {
      type: 'body (PhpSerializer)',
      message: 'body (PhpSerializer)',
      stack: stack ? 'body (PhpSerializer)' : undefined,
    },
  }
  const counts = [...text.matchAll(/retryCount\\?";i:(\d{1,9});/g)].map((m) => Number(m[1]))
  if (counts.length) facts.attempts = { value: Math.max(...counts) + 1, source: 'body RedeliveryStamp.retryCount + 1' }
}

/** Symfony Messenger failure transport (docs/framework-headers.md#symfony-messenger). */
export function extractSymfony(ctx: FrameworkContext): FrameworkFacts {
  const facts = emptyFacts()
  if (!fromJsonStamps(ctx, facts)) fromSerializedBody(ctx, facts)
  facts.messageType = headerText(ctx, 'type') ?? propertyText(ctx, 'type')
  return facts
}
