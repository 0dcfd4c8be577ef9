/**
 * The headers of a realistic dead letter, as Spring AMQP's RepublishMessageRecoverer and RabbitMQ leave them after
 * three rejections and two 30 s retries (docs/framework-headers.md): the failure, the original route and two x-death
 * entries with typed counts and times. bench:drain publishes them; the drainer's allocation test decodes them.
 */
export function springFailureHeaders(options: { index: number; nowSeconds: number; stack: string }) {
  const { index: i, nowSeconds: now, stack } = options
  return {
    'x-exception-message': `SKU ${48213 + (i % 50)} out of stock in warehouse WH-${i % 9}`,
    'x-exception-stacktrace': stack,
    'x-original-exchange': 'orders',
    'x-original-routingKey': 'order.created',
    'retry-count': { '!': 'long', value: 3 },
    'x-death': [
      { count: { '!': 'long', value: 3 }, reason: 'rejected', queue: 'orders.work', time: { '!': 'timestamp', value: now }, exchange: 'orders', 'routing-keys': ['order.created'] },
      { count: { '!': 'long', value: 2 }, reason: 'expired', queue: 'orders.retry.30s', time: { '!': 'timestamp', value: now - 30 }, exchange: 'orders.retry', 'routing-keys': ['order.created'] },
    ],
    'x-first-death-queue': 'orders.work',
    'x-first-death-reason': 'rejected',
    'x-first-death-exchange': 'orders',
  }
}
