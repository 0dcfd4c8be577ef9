import 'server-only'

/*
 * The subjects the server publishes a consumer's failure advisories and sampled ack times on
 * (docs/jetstream.md#why-there-is-no-queue-to-drain). A stream keeps such a message when one of its subjects matches it
 * by the NATS wildcard rules (lib/shared/nats-subjects.ts).
 */

export const MAX_DELIVERIES_ADVISORY = '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES'
export const TERMINATED_ADVISORY = '$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED'
/** Where the server publishes a consumer's sampled ack times when its `sample_freq` asks for them. */
export const ACK_METRIC = '$JS.EVENT.METRIC.CONSUMER.ACK'

/** The two failure advisory subjects of one consumer. */
export function consumerAdvisorySubjects(stream: string, consumer: string): { maxDeliveries: string; terminated: string } {
  return { maxDeliveries: `${MAX_DELIVERIES_ADVISORY}.${stream}.${consumer}`, terminated: `${TERMINATED_ADVISORY}.${stream}.${consumer}` }
}
