import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel, Options } from '@/lib/server/platform/broker/amqplib'
import { brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { drainQueues, storedCount } from '../helpers/drainer'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'

const now = Math.floor(Date.now() / 1000)
const xDeath = (queue: string, exchange: string, keys: string[], count = 1) => [
  { queue, reason: 'rejected', count: { '!': 'long', value: count }, exchange, 'routing-keys': keys, time: { '!': 'timestamp', value: now } },
]

const JAVA_STACK = `org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method 'handle' threw exception
\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.wrapToListenerExecutionFailedExceptionIfNeeded(AbstractMessageListenerContainer.java:1767)
Caused by: com.acme.billing.InvoiceRejectedException: invoice 88123 rejected by ledger
\tat com.acme.billing.LedgerClient.post(LedgerClient.java:52)
\tat com.acme.billing.InvoiceListener.handle(InvoiceListener.java:31)
\t... 12 more`

const DOTNET_TOSTRING = `System.InvalidOperationException: Order 5521 cannot ship: address missing
   at Acme.Shipping.ShipOrderHandler.Handle(ShipOrder message, IMessageHandlerContext context) in /src/Shipping/ShipOrderHandler.cs:line 41
   at NServiceBus.InvokeHandlerTerminator.Terminate(IInvokeHandlerContext context)`

type Case = { name: string; body: Buffer; options: Options.Publish; expected: Record<string, unknown> }

const cases: Case[] = [
  {
    name: 'spring-amqp',
    body: Buffer.from('{"invoice":88123}'),
    options: {
      messageId: 'spring-1', contentType: 'application/json',
      headers: { 'x-exception-message': 'invoice 88123 rejected by ledger', 'x-exception-stacktrace': JAVA_STACK, 'x-original-exchange': 'billing', 'x-original-routingKey': 'invoice.created' },
    },
    expected: { framework: 'spring-amqp', error_type: 'com.acme.billing.InvoiceRejectedException', error_message: 'invoice 88123 rejected by ledger', origin_exchange: 'billing', origin_routing_keys: ['invoice.created'] },
  },
  {
    name: 'masstransit',
    body: Buffer.from('{"message":{"orderId":"o-1"}}'),
    options: {
      messageId: 'mt-1', contentType: 'application/vnd.masstransit+json',
      headers: {
        'MT-Reason': 'fault', 'MT-Fault-ExceptionType': 'System.TimeoutException', 'MT-Fault-Message': 'The operation has timed out after 30000ms',
        'MT-Fault-StackTrace': '   at Acme.Orders.PaymentConsumer.Consume(ConsumeContext`1 context) in /src/PaymentConsumer.cs:line 19',
        'MT-Fault-Timestamp': '2026-11-30T10:15:00.0000000Z', 'MT-Fault-InputAddress': 'rabbitmq://localhost/orders-payment',
        'MT-Host-MachineName': 'web-7', 'MT-Host-ProcessName': 'Acme.Orders', 'MT-Host-Assembly': 'Acme.Orders', 'MT-Host-AssemblyVersion': '2.3.1.0',
      },
    },
    expected: { framework: 'masstransit', error_type: 'System.TimeoutException', failure_kind: 'transient', origin_queue: 'orders-payment', service_version: '2.3.1.0' },
  },
  {
    name: 'nservicebus',
    body: Buffer.from('{"OrderId":5521}'),
    options: {
      messageId: 'nsb-1',
      headers: {
        'NServiceBus.ExceptionInfo.ExceptionType': 'System.InvalidOperationException', 'NServiceBus.ExceptionInfo.Message': 'Order 5521 cannot ship: address missing',
        'NServiceBus.ExceptionInfo.StackTrace': DOTNET_TOSTRING, 'NServiceBus.FailedQ': 'Shipping', 'NServiceBus.TimeOfFailure': '2026-11-30 10:16:00:123456 Z',
        'NServiceBus.ProcessingEndpoint': 'Shipping',
      },
    },
    expected: { framework: 'nservicebus', error_type: 'System.InvalidOperationException', origin_queue: 'Shipping', service: 'Shipping' },
  },
  {
    name: 'lazarus own headers',
    body: Buffer.from('{"id":"doc-9"}'),
    options: {
      messageId: 'lz-1', appId: 'search-indexer',
      headers: { 'x-error-type': 'ValidationError', 'x-error-message': 'field "title" is required', 'x-failure-kind': 'invalid', 'x-service': 'search-indexer', 'x-service-version': '1.5.0', 'x-death': xDeath('search.work', 'search', ['doc.updated'], 3) },
    },
    expected: { framework: 'lazarus', error_type: 'ValidationError', failure_kind: 'invalid', service: 'search-indexer', service_version: '1.5.0', origin_queue: 'search.work', origin_exchange: 'search', attempts: 3 },
  },
  {
    name: 'plain DLX',
    body: Buffer.from([0x0a, 0x03, 0x66, 0x6f, 0x6f]),
    options: { messageId: 'dlx-1', contentType: 'application/x-protobuf', headers: { 'x-death': xDeath('payments.work', 'payments', ['payment.captured'], 2), 'x-first-death-queue': 'payments.work', 'x-first-death-reason': 'rejected', 'x-first-death-exchange': 'payments' } },
    expected: { framework: 'plain-dlx', error_type: null, origin_queue: 'payments.work', origin_exchange: 'payments', origin_routing_keys: ['payment.captured'], death_reason: 'rejected', attempts: 2, body_encoding: 'binary' },
  },
]

describe('framework conventions, through the broker and the drainer', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  let drainer: Drainer
  const dlq = uniqueName('frameworks_dlq')
  let sourceId: string

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await channel.assertQueue(dlq, { durable: false })
    for (const c of cases) channel.sendToQueue(dlq, c.body, c.options)
    ;({ drainer, sourceIds: { [dlq]: sourceId } } = await drainQueues(db, [dlq]))
    await waitFor(async () => (await storedCount(db.sql, sourceId)) === cases.length || null, { what: 'all framework messages stored' })
  })

  afterAll(async () => {
    await drainer?.stop()
    await channel?.deleteQueue(dlq).catch(() => {})
    await connection?.close()
    await db?.drop()
  })

  for (const c of cases) {
    it(`derives the failure of a ${c.name} message`, async () => {
      const { rows } = await db.sql.query<Record<string, unknown>>(
        `SELECT framework, error_type, error_message, error_stack, failure_kind, service, service_version, origin_exchange,
           origin_routing_keys, origin_queue, attempts, death_reason, body_encoding, body FROM dead_letters WHERE properties->>'messageId' = $1`,
        [c.options.messageId],
      )
      expect(rows[0]).toMatchObject(c.expected)
      expect(Buffer.from(rows[0].body as Uint8Array)).toEqual(c.body)
    })
  }
})
