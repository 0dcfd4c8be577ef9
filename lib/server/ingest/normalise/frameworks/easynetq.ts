import 'server-only'
import { parseJsonText, type ParsedJson } from '../delivery-body'
import { parseIsoDate } from '../dates'
import { asNonBlankText, asRecord, asText, getField } from '../header-values'
import { analyseStack } from '../stack-trace'
import { emptyFacts, sourced, type FrameworkContext, type FrameworkFacts } from './facts'

/** EasyNetQ BasicProperties (PascalCase) → the AmqpProperties names entity-key rules use. */
const PROPERTY_NAMES: Record<string, string> = {
  correlationId: 'CorrelationId',
  messageId: 'MessageId',
  type: 'Type',
  appId: 'AppId',
  userId: 'UserId',
  replyTo: 'ReplyTo',
}

/** System.Text.Json writes each header as {"Type": code, "Value": …}; Newtonsoft writes the value. */
function unwrapHeaders(headers: unknown): Record<string, unknown> {
  const rec = asRecord(headers)
  if (!rec) return {}
  const out: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(rec)) {
    const wrapped = asRecord(value)
    out[name] = wrapped && Object.hasOwn(wrapped, 'Value') ? wrapped.Value : value
  }
  return out
}

/** The wrapped original body: UTF-8 text, or base64 with Base64ErrorMessageSerializer. */
function innerJson(message: unknown): ParsedJson | null {
  const text = asText(message)
  if (text === null) return null
  const direct = parseJsonText(text)
  if (direct) return direct
  if (!/^[A-Za-z0-9+/=\s]+$/.test(text)) return null
  return parseJsonText(Buffer.from(text, 'base64').toString('utf8'))
}

/** EasyNetQ's wrapped error message (docs/framework-headers.md#easynetq). */
export function extractEasyNetQ(ctx: FrameworkContext): FrameworkFacts {
  const facts = emptyFacts()
  const envelope = asRecord(ctx.body.json()?.value)
  if (!envelope) {
    facts.flags.push('easynetq-body-invalid')
    return facts
  }
  const field = (name: string) => getField(envelope, name)

  const exception = asNonBlankText(field('Exception'))
  if (exception !== null) {
    const analysis = analyseStack(exception, { hint: 'dotnet' })
    facts.error = {
      type: analysis.root?.type ?? null,
      message: analysis.root?.message ?? null,
      stack: exception,
      frames: analysis.frames,
      rootMissing: analysis.rootMissing,
      extraParts: [],
      sources: { type: 'body.Exception', message: 'body.Exception', stack: 'body.Exception' },
    }
  }

  const exchange = asText(field('Exchange'))
  const routingKey = asText(field('RoutingKey'))
  const queue = asNonBlankText(field('Queue'))
  if (exchange !== null) facts.origin.exchange = { value: exchange, source: 'body.Exchange' }
  if (routingKey) facts.origin.routingKeys = { value: [routingKey], source: 'body.RoutingKey' }
  if (queue !== null) facts.origin.queue = { value: queue, source: 'body.Queue' }

  const dateTime = asNonBlankText(field('DateTime'))
  const failedAt = dateTime === null ? null : parseIsoDate(dateTime)
  if (dateTime !== null && failedAt === null) facts.flags.push('easynetq-datetime-malformed')
  facts.failedAt = sourced(failedAt, 'body.DateTime')

  const props = asRecord(field('BasicProperties'))
  facts.service = sourced(asNonBlankText(getField(props, 'AppId')), 'body.BasicProperties.AppId')
  facts.messageType = asNonBlankText(getField(props, 'Type'))

  // Entity rules describe the business message, which sits inside the envelope.
  const innerProperties: Record<string, unknown> = { ...ctx.properties }
  for (const [ours, theirs] of Object.entries(PROPERTY_NAMES)) {
    const value = asNonBlankText(getField(props, theirs))
    if (value !== null) innerProperties[ours] = value
  }
  const inner = innerJson(field('Message'))
  facts.entitySource = {
    properties: innerProperties,
    headers: { ...ctx.headers, ...unwrapHeaders(getField(props, 'Headers')) },
    json: () => inner ?? ctx.body.json(),
  }
  return facts
}
