import 'server-only'
import { REPLY, replyCodeOf } from '@/lib/server/platform/broker/amqp-errors'

/** Broker replies to basic.consume, said in an operator's words (the raw reply stays in the log line). */
export function describeConsumeFailure(error: unknown, queue: string): string {
  switch (replyCodeOf(error)) {
    case REPLY.NOT_FOUND:
      return `queue "${queue}" does not exist (deleted, or not declared yet)`
    case REPLY.ACCESS_REFUSED:
      return `access to queue "${queue}" refused: the broker user may not consume from it`
    case REPLY.RESOURCE_LOCKED:
      return `queue "${queue}" is exclusive to another connection`
    default:
      return (error as Error)?.message ?? String(error)
  }
}
