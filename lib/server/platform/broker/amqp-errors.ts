import 'server-only'
import { IllegalOperationError } from '@/lib/server/platform/broker/amqplib'
import { logger } from '@/lib/server/platform/log'

/** AMQP 0-9-1 reply codes (amqplib puts them on `error.code` when the broker closes a channel or connection). */
export const REPLY = {
  SUCCESS: 200,
  CONTENT_TOO_LARGE: 311,
  NO_ROUTE: 312,
  NO_CONSUMERS: 313,
  CONNECTION_FORCED: 320,
  INVALID_PATH: 402,
  ACCESS_REFUSED: 403,
  NOT_FOUND: 404,
  RESOURCE_LOCKED: 405,
  PRECONDITION_FAILED: 406,
  FRAME_ERROR: 501,
  SYNTAX_ERROR: 502,
  COMMAND_INVALID: 503,
  CHANNEL_ERROR: 504,
  UNEXPECTED_FRAME: 505,
  RESOURCE_ERROR: 506,
  NOT_ALLOWED: 530,
  NOT_IMPLEMENTED: 540,
  INTERNAL_ERROR: 541,
} as const

/**
 * What an AMQP failure means to the code that met it, from least to most serious for the process:
 *
 * - `channel`: the channel is closed (or was never usable) but the connection stands; open another and try again,
 *   later if the cause is the broker's state (a queue not declared yet, an exclusive queue held by someone else);
 * - `connection`: the connection is gone or going (the broker closed it, a restart, the network); it recovers on
 *   its own, and the work is done again on the new one;
 * - `caller`: the broker refused what was asked (permissions, arguments that differ from the declared object's, a
 *   message too large); asking again unchanged fails again;
 * - `fatal`: a protocol fault or a client bug; nothing to retry until someone acts.
 */
export type AmqpErrorKind = 'channel' | 'connection' | 'caller' | 'fatal'

const BY_REPLY_CODE: Record<number, AmqpErrorKind> = {
  [REPLY.SUCCESS]: 'connection',
  [REPLY.CONNECTION_FORCED]: 'connection',
  [REPLY.RESOURCE_ERROR]: 'connection',
  [REPLY.INTERNAL_ERROR]: 'connection',
  [REPLY.NOT_FOUND]: 'channel',
  [REPLY.RESOURCE_LOCKED]: 'channel',
  [REPLY.ACCESS_REFUSED]: 'caller',
  [REPLY.PRECONDITION_FAILED]: 'caller',
  [REPLY.CONTENT_TOO_LARGE]: 'caller',
  [REPLY.NO_ROUTE]: 'caller',
  [REPLY.NO_CONSUMERS]: 'caller',
  [REPLY.NOT_ALLOWED]: 'caller',
  [REPLY.INVALID_PATH]: 'fatal',
  [REPLY.FRAME_ERROR]: 'fatal',
  [REPLY.SYNTAX_ERROR]: 'fatal',
  [REPLY.COMMAND_INVALID]: 'fatal',
  [REPLY.CHANNEL_ERROR]: 'fatal',
  [REPLY.UNEXPECTED_FRAME]: 'fatal',
  [REPLY.NOT_IMPLEMENTED]: 'fatal',
}

/** Node's codes for a certificate the client refused: a configuration fault, not a broker that is away. */
const TLS_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
])

/** The AMQP reply code the broker closed with, if the error carries one. */
export function replyCodeOf(error: unknown): number | null {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'number' ? code : null
}

/**
 * Ranks an error from amqplib (or the socket under it) by its reply code or type; never by its text. Errors that
 * carry neither (amqplib's "Heartbeat timeout", "Unexpected close", a handshake the broker ended, "channel closed"
 * for unconfirmed publishes) are connection-level: the connection is, or is about to be, recovered.
 */
export function classifyAmqpError(error: unknown): AmqpErrorKind {
  const reply = replyCodeOf(error)
  if (reply !== null) return BY_REPLY_CODE[reply] ?? 'fatal'
  if (error instanceof IllegalOperationError) return 'channel'
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string') return TLS_CODES.has(code) ? 'fatal' : 'connection'
  // amqplib's own argument checks (a buffer expected, a header table over 64 KiB).
  if (error instanceof TypeError || error instanceof RangeError) return 'caller'
  return 'connection'
}

/** Worth trying again: the connection or a new channel may do what this one could not. */
export const isRecoverable = (kind: AmqpErrorKind) => kind === 'channel' || kind === 'connection'

const log = logger('broker')

/**
 * The one place AMQP failures are logged: by rank (recoverable ones as warnings, refusals and faults as errors), with
 * the reply code, so a log search finds every 403 whichever part of Lazarus met it.
 */
export function logAmqpError(message: string, error: unknown, fields: Record<string, unknown> = {}): AmqpErrorKind {
  const kind = classifyAmqpError(error)
  const line = { ...fields, kind, code: replyCodeOf(error) ?? (error as { code?: unknown } | null)?.code ?? null, error: (error as Error)?.message ?? String(error) }
  if (isRecoverable(kind)) log.warn(message, line)
  else log.error(message, line)
  return kind
}
