/**
 * What the demo's consumers do with a message Lazarus replayed into a demo work queue (README: Quick start).
 * A replayed copy carries Lazarus' lineage headers (README: Replay); the seed has no failure plan for it, so it is not
 * an interrupted run's leftover. About one in three keeps failing, every time it is replayed (chosen by its original
 * message, so the same ones fail again): its copy goes to the app's dead exchange with the lineage headers kept, and
 * Lazarus shows it as "failed again after replay". The others succeed and are acked.
 */
import { createHash } from 'node:crypto'
import type { ConfirmChannel, ConsumeMessage } from 'amqplib'

const BROKER_HEADERS = ['x-death', 'x-first-death-queue', 'x-first-death-reason', 'x-first-death-exchange', 'x-last-death-queue', 'x-last-death-reason', 'x-last-death-exchange']

export type ReplayTally = { replaysSucceeded: number; replaysFailedAgain: number }

export function isReplayed(msg: ConsumeMessage): boolean {
  return msg.properties.headers?.['x-lazarus-replay-id'] !== undefined
}

/** The same third of the original messages fails on every replay. */
export function failsAgain(msg: ConsumeMessage): boolean {
  const origin = String(msg.properties.headers?.['x-lazarus-origin-id'] ?? msg.properties.messageId ?? '')
  return createHash('sha1').update(origin).digest()[0]! % 3 === 0
}

export function handleReplayed(ch: ConfirmChannel, msg: ConsumeMessage, deadExchange: string, tally: ReplayTally): void {
  if (!failsAgain(msg)) {
    tally.replaysSucceeded++
    ch.ack(msg)
    return
  }
  const headers = { ...msg.properties.headers }
  for (const name of BROKER_HEADERS) delete headers[name]
  const { contentType, contentEncoding, messageId, correlationId, appId, type, timestamp } = msg.properties
  ch.publish(deadExchange, msg.fields.routingKey, msg.content, { contentType, contentEncoding, messageId, correlationId, appId, type, timestamp, headers, persistent: true }, (err) => {
    try {
      if (err) ch.nack(msg, false, true)
      else {
        tally.replaysFailedAgain++
        ch.ack(msg)
      }
    } catch {
      // channel already closed during shutdown: the broker redelivers the message
    }
  })
}
