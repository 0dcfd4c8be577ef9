import 'server-only'
import type { ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import type { IngestRow } from '@/lib/server/ingest/types'

/** What ack and nack read of a delivery; keeping only this lets the decoded headers go while the row waits. */
type Ackable = Pick<ConsumeMessage, 'fields'>

/** A delivery normalised into its row, waiting, unacked, for its batch to be stored. */
export type PendingDelivery = { row: IngestRow; message: Ackable; bytes: number; arrivedAt: number }

/** amqplib's ack and nack read nothing of a message but fields.deliveryTag. */
export const asMessage = (ackable: Ackable) => ackable as ConsumeMessage
