import 'server-only'
import { randomBytes } from 'node:crypto'

/**
 * Lazarus' drain consumers carry tags starting with this, so the management API shows which consumers of a queue are
 * Lazarus' own (a new source is refused while anyone else consumes its queue). The connection name would not do: the
 * management API's consumer list names the broker's connection, not the client-provided name.
 */
export const DRAIN_CONSUMER_TAG_PREFIX = 'lazarus-drain.'

/** Unique per consume call (a paused consumer re-consumes on the same channel, where tags must not repeat). */
export function drainConsumerTag(sourceId: string): string {
  return `${DRAIN_CONSUMER_TAG_PREFIX}${sourceId}.${randomBytes(6).toString('hex')}`
}
