import { describe, expect, it } from 'vitest'
import { IllegalOperationError } from '@/lib/server/platform/broker/amqplib'
import { classifyAmqpError, isRecoverable, REPLY, replyCodeOf, type AmqpErrorKind } from '@/lib/server/platform/broker/amqp-errors'

/** Shaped as amqplib builds them: the broker's reply code on `code`, the method it answered on `classId`/`methodId`. */
const closedByBroker = (code: number, text: string, classId = 50, methodId = 10) =>
  Object.assign(new Error(`Operation failed: QueueDeclare; ${code} (${text.split(' ')[0]}) with message "${text}"`), { code, classId, methodId })
const connectionClosed = (code: number, text: string) => Object.assign(new Error(`Connection closed: ${code} (${text.split(' ')[0]}) with message "${text}"`), { code })
const socketError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5672`), { code, errno: -111, syscall: 'connect' })

describe('classifyAmqpError', () => {
  const cases: [string, unknown, AmqpErrorKind][] = [
    // The broker closed the channel; the connection stands.
    ['404 a queue or exchange that does not exist', closedByBroker(404, "NOT_FOUND - no queue 'orders.dlq' in vhost '/'"), 'channel'],
    ['405 an exclusive queue held by another connection', closedByBroker(405, 'RESOURCE_LOCKED - cannot obtain exclusive access'), 'channel'],
    ['a channel (or connection) already closed', new IllegalOperationError('Channel closed', undefined), 'channel'],
    // The connection is gone; recovery reconnects.
    ['320 closed by an administrator or a broker shutdown', connectionClosed(320, 'CONNECTION_FORCED - Closed via management plugin'), 'connection'],
    ['541 an internal error of the broker', connectionClosed(541, 'INTERNAL_ERROR'), 'connection'],
    ['the broker refusing connections', socketError('ECONNREFUSED'), 'connection'],
    ['a reset socket', socketError('ECONNRESET'), 'connection'],
    ['a name that does not resolve (DNS may come back)', socketError('ENOTFOUND'), 'connection'],
    ["amqplib's heartbeat timeout (no code)", new Error('Heartbeat timeout'), 'connection'],
    ['a socket closed during the handshake (no code)', new Error('Socket closed abruptly during opening handshake'), 'connection'],
    // What was asked is refused; asking again fails again.
    ['403 a permission the user lacks', closedByBroker(403, "ACCESS_REFUSED - access to queue 'x' in vhost '/' refused for user 'lazarus'"), 'caller'],
    ['406 arguments unlike the declared queue', closedByBroker(406, "PRECONDITION_FAILED - inequivalent arg 'x-queue-type'"), 'caller'],
    ['406 a user_id that is not the connection user', closedByBroker(406, 'PRECONDITION_FAILED - user_id property set to x but authenticated user was y', 60, 40), 'caller'],
    ['311 a message over the broker limit', closedByBroker(311, 'CONTENT_TOO_LARGE'), 'caller'],
    ['530 not allowed', connectionClosed(530, 'NOT_ALLOWED - access to vhost refused'), 'caller'],
    ["amqplib's header table over 64 KiB", new RangeError('encoded headers table exceeds 65536 bytes'), 'caller'],
    ["amqplib's argument check", new TypeError('content is not a buffer'), 'caller'],
    // Faults: nothing to retry until someone acts.
    ['501 a frame error', connectionClosed(501, 'FRAME_ERROR'), 'fatal'],
    ['503 a command invalid in this state', connectionClosed(503, 'COMMAND_INVALID - unknown delivery tag 7'), 'fatal'],
    ['505 an unexpected frame', connectionClosed(505, 'UNEXPECTED_FRAME'), 'fatal'],
    ['540 not implemented', connectionClosed(540, 'NOT_IMPLEMENTED'), 'fatal'],
    ['a reply code the protocol does not define', closedByBroker(999, 'SOMETHING_NEW'), 'fatal'],
    ['a broker certificate that expired', socketError('CERT_HAS_EXPIRED'), 'fatal'],
  ]
  it.each(cases)('%s', (_name, error, kind) => {
    expect(classifyAmqpError(error)).toBe(kind)
  })

  it('reads codes, never texts: a message that names a reply is not one', () => {
    expect(classifyAmqpError(new Error('Handshake terminated by server: 403 (ACCESS-REFUSED)'))).toBe('connection')
    expect(classifyAmqpError(Object.assign(new Error('NOT_FOUND - no queue'), { code: REPLY.ACCESS_REFUSED }))).toBe('caller')
  })

  it('takes anything thrown', () => {
    for (const thrown of [undefined, null, 'text', 42, { code: 'weird' }]) expect(classifyAmqpError(thrown)).toBe('connection')
    expect(classifyAmqpError({ code: 404 })).toBe('channel')
  })

  it('recoverable: channel and connection; not caller or fatal', () => {
    expect((['channel', 'connection', 'caller', 'fatal'] as const).map(isRecoverable)).toEqual([true, true, false, false])
  })

  it('replyCodeOf gives the numeric reply code only', () => {
    expect(replyCodeOf(closedByBroker(404, 'NOT_FOUND'))).toBe(404)
    expect(replyCodeOf(socketError('ECONNREFUSED'))).toBeNull()
    expect(replyCodeOf(new Error('x'))).toBeNull()
  })
})
