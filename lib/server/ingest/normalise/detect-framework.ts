import 'server-only'
import type { Framework } from '../types'
import type { DeliveryBody } from './delivery-body'
import { asRecord, getField, headerNamesWithPrefix } from './header-values'

export type DetectionInput = {
  queue: string
  routingKey: string
  headers: Record<string, unknown>
  properties: Record<string, unknown>
  body: DeliveryBody
}

export const LAZARUS_ERROR_HEADERS = ['x-error-type', 'x-error-message', 'x-error-stack'] as const

const has = (headers: Record<string, unknown>, name: string) => {
  const value = getField(headers, name)
  return value !== undefined && value !== null
}

const EASYNETQ_ERROR_TYPE = /^EasyNetQ\.SystemMessages\.Error(?:[,:]\s*EasyNetQ)?$/
const EASYNETQ_FIELDS = ['RoutingKey', 'Exchange', 'Queue', 'Exception', 'Message', 'DateTime', 'BasicProperties']

function isEasyNetQ(input: DetectionInput): boolean {
  const type = getField(input.properties, 'type')
  if (typeof type !== 'string' || !EASYNETQ_ERROR_TYPE.test(type.trim())) return false
  const body = asRecord(input.body.json()?.value)
  // The shape changed little across 6.x–8.x; demand the exception plus most of the rest.
  if (body === null || typeof getField(body, 'Exception') !== 'string') return false
  return EASYNETQ_FIELDS.filter((f) => Object.hasOwn(body, f)).length >= 5
}

/** Only the head of the body is searched: the serialized Envelope class name comes first. */
const SYMFONY_SCAN_BYTES = 8192
const SYMFONY_ENVELOPE = /Symfony\\{1,2}Component\\{1,2}Messenger\\{1,2}Envelope/

function hasSymfonyEnvelope(body: DeliveryBody): boolean {
  const head = body.bytes.subarray(0, SYMFONY_SCAN_BYTES).toString('latin1')
  if (SYMFONY_ENVELOPE.test(head)) return true
  // PhpSerializer base64-encodes bodies that are not valid UTF-8.
  if (!/^[A-Za-z0-9+/=\s]{16,}$/.test(head.slice(0, 1024))) return false
  return SYMFONY_ENVELOPE.test(Buffer.from(head, 'base64').toString('latin1'))
}

/**
 * Spring Cloud Stream uses the same headers as Spring AMQP's RepublishMessageRecoverer
 * (docs/framework-headers.md#spring-cloud-stream). Spring AMQP's default DLQ routing key is "error.<original key>";
 * SCSt's DLQ is "<destination>.<group>.dlq", published with the consumer queue name as routing key, on an exchange
 * called (prefix)DLX, and SCSt ≥ 4.2 always writes `retry-count`, which Spring AMQP writes only when the app asks for
 * it.
 */
export function springFlavour(input: DetectionInput): 'spring-amqp' | 'spring-cloud-stream' {
  if (input.routingKey.startsWith('error.')) return 'spring-amqp'
  if (input.queue.endsWith('.dlq')) return 'spring-cloud-stream'
  if (has(input.headers, 'retry-count')) return 'spring-cloud-stream'
  return 'spring-amqp'
}

/**
 * docs/framework-headers.md#detection-order: the first match wins; Lazarus' own headers only name the framework when
 * nothing else does.
 */
export function detectFramework(input: DetectionInput): Framework {
  const h = input.headers
  if (has(h, 'NServiceBus.ExceptionInfo.ExceptionType') || has(h, 'NServiceBus.FailedQ')) return 'nservicebus'
  if (has(h, 'MT-Fault-ExceptionType') || has(h, 'MT-Reason')) return 'masstransit'
  if (has(h, 'x-exception-message') || has(h, 'x-exception-stacktrace') || has(h, 'x-original-exchange')) {
    return springFlavour(input)
  }
  if (has(h, 'rbs2-error-details')) return 'rebus'
  if (has(h, 'exception-type') && has(h, 'failed-at')) return 'wolverine'
  if (isEasyNetQ(input)) return 'easynetq'
  if (headerNamesWithPrefix(h, 'X-Message-Stamp-').length > 0 || hasSymfonyEnvelope(input.body)) return 'symfony'
  if (has(h, 'lang') && has(h, 'task') && has(h, 'id')) return 'celery'
  if (has(h, 'HandledCount') && has(h, 'MessageType')) return 'brighter'
  if (LAZARUS_ERROR_HEADERS.some((name) => has(h, name))) return 'lazarus'
  if (has(h, 'x-death') || has(h, 'x-first-death-queue') || has(h, 'x-first-death-reason')) return 'plain-dlx'
  return 'unknown'
}
