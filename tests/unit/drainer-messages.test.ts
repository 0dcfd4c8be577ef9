import { describe, expect, it } from 'vitest'
import { describeConsumeFailure } from '@/lib/server/engines/drainer/consume-failure'

describe('describeConsumeFailure', () => {
  const reply = (code: number, text: string) => Object.assign(new Error(`Operation failed: BasicConsume; ${code} (${text.split(' ')[0]}) with message "${text}"`), { code })

  it.each([
    [reply(404, "NOT_FOUND - no queue 'orders.dlq' in vhost '/'"), /queue "orders.dlq" does not exist/],
    [reply(403, "ACCESS_REFUSED - access to queue 'orders.dlq' refused"), /refused/],
    [reply(405, "RESOURCE_LOCKED - cannot obtain exclusive access"), /exclusive/],
    [new Error('Channel closed'), /^Channel closed$/],
    // Told by amqplib's reply code, not by the text: without a code the reply is shown as it is.
    [new Error("NOT_FOUND - no queue 'orders.dlq' in vhost '/'"), /^NOT_FOUND - no queue/],
  ])('%s', (error, expected) => {
    expect(describeConsumeFailure(error, 'orders.dlq')).toMatch(expected)
  })
})
