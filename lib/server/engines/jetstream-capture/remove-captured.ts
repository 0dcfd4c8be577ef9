import 'server-only'
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream'

/** A captured message as its stream holds it. */
export type MessageInStream = { stream: string; seq: number }

/** What a removal did: how many messages are no longer in their streams, and why the others still are. */
export type RemovalOutcome = { removed: number; failed: { count: number; streams: string[]; reason: string } | null }

/** Gone already: removed by its stream's limits, by an earlier removal, or with its whole stream. */
function alreadyGone(error: unknown): boolean {
  return error instanceof JetStreamApiError && (error.code === JetStreamApiCodes.NoMessageFound || error.code === JetStreamApiCodes.StreamNotFound)
}

/**
 * Deletes captured messages from their streams, for a source whose admin asked for it
 * (docs/jetstream.md#removing-captured-messages). The capture calls it after the transaction that stored them
 * committed and before it acknowledges their advisories, which is what keeps a crash from losing anything:
 * - before the delete: the advisory is delivered again, finds its stored row (nothing is added) and the delete is
 *   tried again;
 * - after the delete, before the ack: the advisory is delivered again and finds the message gone; the record of its
 *   advisory built then has the stored row's key, so the row keeps the whole message;
 * - a message already gone counts as removed.
 * A delete refused for any other reason (the stream denies deletes, the account may not, a timeout) leaves the message
 * in its stream and the row stored; the outcome says why, and the capture goes on. `no_erase`: the server drops the
 * message as an ack of a work queue would, without overwriting its bytes on disk first, which only a secret needs.
 */
export async function removeCaptured(options: { jsm: JetStreamManager; messages: readonly MessageInStream[] }): Promise<RemovalOutcome> {
  const results = await Promise.all(
    options.messages.map(async ({ stream, seq }) => {
      try {
        return (await options.jsm.streams.deleteMessage(stream, seq, false)) ? null : { stream, reason: 'the server answered that it did not delete it' }
      } catch (error) {
        return alreadyGone(error) ? null : { stream, reason: (error as Error).message }
      }
    }),
  )
  const failures = results.filter((r) => r !== null)
  if (failures.length === 0) return { removed: results.length, failed: null }
  return {
    removed: results.length - failures.length,
    failed: { count: failures.length, streams: [...new Set(failures.map((f) => f.stream))], reason: failures[0].reason },
  }
}
