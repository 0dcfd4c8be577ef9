import { describe, expect, it } from 'vitest'
import { normaliseDelivery } from '@/lib/server/ingest/normalise/normalise-delivery'
import type { DeliveryView, FailureKind, Framework, PlainHeaders } from '@/lib/server/ingest/types'

const NOW = new Date('2024-03-01T12:00:00Z')
const T = (iso: string) => new Date(iso)

function delivery(overrides: Partial<DeliveryView>): DeliveryView {
  return {
    queue: 'dlq',
    exchange: '',
    routingKey: '',
    redelivered: false,
    properties: {},
    headers: {},
    body: Buffer.from('{"orderId":"ORD-1"}'),
    ...overrides,
  }
}

/** amqplib hands long strings over as Buffers; the drainer may pass either. */
const longstr = (text: string) => Buffer.from(text, 'utf8')

// --- Spring AMQP RepublishMessageRecoverer (docs/framework-headers.md#spring-amqp) -----------------------------------

const SPRING_TRACE = [
  "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method 'public void com.acme.orders.OrderListener.onOrder(com.acme.orders.OrderPlaced)' threw exception",
  '\tat org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter.invokeHandler(MessagingMessageListenerAdapter.java:286)',
  '\tat org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter.onMessage(MessagingMessageListenerAdapter.java:149)',
  '\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.doInvokeListener(AbstractMessageListenerContainer.java:1671)',
  '\tat org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer$AsyncMessageProcessingConsumer.run(SimpleMessageListenerContainer.java:1367)',
  '\tat java.base/java.lang.Thread.run(Thread.java:1583)',
  'Caused by: com.acme.orders.InvalidOrderException: Order 48213 has no line items',
  '\tat com.acme.orders.OrderValidator.validate(OrderValidator.java:42)',
  '\tat com.acme.orders.OrderListener.onOrder(OrderListener.java:27)',
  '\tat jdk.internal.reflect.GeneratedMethodAccessor87.invoke(Unknown Source)',
  '\tat java.base/jdk.internal.reflect.DelegatingMethodAccessorImpl.invoke(DelegatingMethodAccessorImpl.java:43)',
  '\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)',
  '\tat org.springframework.messaging.handler.invocation.InvocableHandlerMethod.doInvoke(InvocableHandlerMethod.java:169)',
  '\t... 12 more',
].join('\n')

const springAmqp = delivery({
  queue: 'orders.errors',
  exchange: 'errors',
  routingKey: 'error.order.placed',
  properties: { appId: 'order-service', contentType: 'application/json' },
  headers: {
    'x-exception-message': longstr('Order 48213 has no line items'),
    'x-exception-stacktrace': longstr(SPRING_TRACE),
    'x-original-exchange': longstr('orders'),
    'x-original-routingKey': longstr('order.placed'),
    __TypeId__: longstr('com.acme.orders.OrderPlaced'),
  },
})

// --- Spring Cloud Stream republishToDlq (docs/framework-headers.md#spring-cloud-stream) -------------------------

const SCST_TRACE = [
  'org.springframework.messaging.MessageHandlingException: error occurred in message handler [org.springframework.cloud.stream.function.FunctionConfiguration$FunctionToDestinationBinder$1@5b3b2f1a], failedMessage=GenericMessage [payload=byte[42], headers={amqp_receivedRoutingKey=orders}]',
  '\tat org.springframework.integration.support.utils.IntegrationUtils.wrapInHandlingExceptionIfNecessary(IntegrationUtils.java:191)',
  '\tat org.springframework.integration.handler.AbstractMessageHandler.doHandleMessage(AbstractMessageHandler.java:108)',
  'Caused by: org.springframework.web.client.HttpServerErrorException$ServiceUnavailable: 503 Service Unavailable: "upstream connect error"',
  '\tat org.springframework.web.client.HttpServerErrorException.create(HttpServerErrorException.java:116)',
  '\tat org.springframework.web.client.DefaultResponseErrorHandler.handleError(DefaultResponseErrorHandler.java:183)',
  '\tat org.springframework.web.client.RestTemplate.handleResponse(RestTemplate.java:942)',
  '\tat com.acme.billing.PaymentClient.charge(PaymentClient.java:58)',
  '\tat com.acme.billing.BillingFunctions.lambda$chargeOrder$0(BillingFunctions.java:33)',
  '\tat com.acme.billing.BillingFunctions$$Lambda/0x00007f3c4c2b1a38.accept(Unknown Source)',
  '\t... 24 more',
].join('\n')

const springCloudStream = delivery({
  queue: 'orders.billing.dlq',
  exchange: 'DLX',
  routingKey: 'orders.billing',
  headers: {
    'x-exception-message': '503 Service Unavailable: "upstream connect error"',
    'x-exception-stacktrace': SCST_TRACE,
    'x-original-exchange': 'orders',
    'x-original-routingKey': 'orders',
    'retry-count': 1,
    contentType: 'application/json',
  },
})

// --- MassTransit <queue>_error (docs/framework-headers.md#masstransit) --------------------------------------------

const MT_STACK = [
  '   at Acme.Billing.PaymentGateway.ChargeAsync(Decimal amount, CancellationToken cancellationToken) in /src/Acme.Billing/PaymentGateway.cs:line 88',
  '   at Acme.Billing.Consumers.ChargeCardConsumer.Consume(ConsumeContext`1 context) in /src/Acme.Billing/Consumers/ChargeCardConsumer.cs:line 31',
  '   at MassTransit.Middleware.MethodConsumerMessageFilter`2.MassTransit.IFilter<MassTransit.ConsumerConsumeContext<TConsumer,TMessage>>.Send(ConsumerConsumeContext`2 context, IPipe`1 next)',
  '   at MassTransit.Middleware.RetryFilter`1.Send(TContext context, IPipe`1 next)',
].join('\n')

const massTransit = delivery({
  queue: 'charge-card_error',
  exchange: 'charge-card_error',
  properties: { messageId: '0b5a0000-5d1b-0015-6f3e-08dc39e3a1b2', contentType: 'application/vnd.masstransit+json' },
  headers: {
    'MT-Reason': 'fault',
    'MT-Fault-ExceptionType': 'System.TimeoutException',
    'MT-Fault-Message': 'The operation has timed out after 00:00:30.',
    'MT-Fault-StackTrace': MT_STACK,
    'MT-Fault-Timestamp': '2024-03-01T10:15:30.1234567Z',
    'MT-Fault-InputAddress': 'rabbitmq://rabbit.internal/billing/charge-card?temporary=false',
    'MT-Fault-ConsumerType': 'Acme.Billing.Consumers.ChargeCardConsumer',
    'MT-Fault-MessageType': 'Acme.Contracts.ChargeCard',
    'MT-Fault-RetryCount': 4,
    'MT-Host-MachineName': 'billing-7d9f',
    'MT-Host-ProcessName': 'Acme.Billing.Worker',
    'MT-Host-ProcessId': '1',
    'MT-Host-Assembly': 'Acme.Billing.Worker',
    'MT-Host-AssemblyVersion': '2.14.0.0',
    'MT-Host-MassTransitVersion': '8.5.8.0',
    'MT-Host-FrameworkVersion': '8.0.2',
  },
})

// --- NServiceBus error queue (docs/framework-headers.md#nservicebus) ----------------------------------------------

const NSB_TOSTRING = [
  'System.InvalidOperationException: Could not save order 3fa85f64-5717-4562-b3fc-2c963f66afa6',
  ' ---> Npgsql.PostgresException (0x80004005): 23505: duplicate key value violates unique constraint "orders_pkey"',
  '   at Npgsql.Internal.NpgsqlConnector.ReadMessageLong(Boolean async, DataRowLoadingMode dataRowLoadingMode, Boolean readingNotifications, Boolean isReadingPrependedMessage)',
  '   at Npgsql.NpgsqlDataReader.NextResult(Boolean async, Boolean isConsuming, CancellationToken cancellationToken)',
  '   at Acme.Orders.Persistence.OrderRepository.SaveAsync(Order order, CancellationToken ct) in /src/Acme.Orders/Persistence/OrderRepository.cs:line 57',
  '   at Acme.Orders.Handlers.PlaceOrderHandler.Handle(PlaceOrder message, IMessageHandlerContext context) in /src/Acme.Orders/Handlers/PlaceOrderHandler.cs:line 24',
  '  Exception data:',
  '    Severity: ERROR',
  '    SqlState: 23505',
  '   --- End of inner exception stack trace ---',
  '   at Acme.Orders.Handlers.PlaceOrderHandler.Handle(PlaceOrder message, IMessageHandlerContext context) in /src/Acme.Orders/Handlers/PlaceOrderHandler.cs:line 31',
  '   at NServiceBus.InvokeHandlerTerminator.Terminate(IInvokeHandlerContext context) in /_/src/NServiceBus.Core/Pipeline/Incoming/InvokeHandlerTerminator.cs:line 33',
  '   at NServiceBus.LoadHandlersConnector.Invoke(IIncomingLogicalMessageContext context, Func`2 stage) in /_/src/NServiceBus.Core/Pipeline/Incoming/LoadHandlersConnector.cs:line 49',
].join('\r\n')

const nServiceBus = delivery({
  queue: 'error',
  exchange: 'error',
  routingKey: '',
  properties: { messageId: 'a1f2e3d4-0000-4000-8000-000000000001', type: 'Acme.Messages.PlaceOrder' },
  headers: {
    'NServiceBus.MessageId': 'a1f2e3d4-0000-4000-8000-000000000001',
    'NServiceBus.EnclosedMessageTypes':
      'Acme.Messages.PlaceOrder, Acme.Messages, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null',
    'NServiceBus.ExceptionInfo.ExceptionType': 'System.InvalidOperationException',
    'NServiceBus.ExceptionInfo.InnerExceptionType': 'Npgsql.PostgresException',
    'NServiceBus.ExceptionInfo.Message': 'Could not save order 3fa85f64-5717-4562-b3fc-2c963f66afa6',
    'NServiceBus.ExceptionInfo.Source': 'Acme.Orders',
    'NServiceBus.ExceptionInfo.StackTrace': longstr(NSB_TOSTRING),
    'NServiceBus.ExceptionInfo.Data.Message type': 'Acme.Messages.PlaceOrder',
    'NServiceBus.FailedQ': 'Sales',
    'NServiceBus.TimeOfFailure': '2024-03-01 10:15:30:123456 Z',
    'NServiceBus.ProcessingEndpoint': 'Sales',
    'NServiceBus.ProcessingMachine': 'SALES-VM-01',
    '$.diagnostics.hostdisplayname': 'SALES-VM-01',
    'NServiceBus.OriginatingEndpoint': 'ClientUI',
    'NServiceBus.Version': '9.2.3',
  },
})

// --- EasyNetQ wrapped error (docs/framework-headers.md#easynetq) --------------------------------------------------

const easyNetQ = delivery({
  queue: 'EasyNetQ_Default_Error_Queue',
  exchange: 'ErrorExchange_Acme.Messages.OrderShipped:Acme.Messages',
  routingKey: 'Acme.Messages.OrderShipped:Acme.Messages',
  properties: { type: 'EasyNetQ.SystemMessages.Error, EasyNetQ', deliveryMode: 2 },
  entityKeyRule: { kind: 'jsonPointer', pointer: '/OrderId' },
  body: Buffer.from(
    JSON.stringify({
      RoutingKey: 'Acme.Messages.OrderShipped:Acme.Messages',
      Exchange: 'Acme.Messages.OrderShipped:Acme.Messages',
      Queue: 'Acme.Messages.OrderShipped:Acme.Messages_shipping',
      Exception: [
        "System.FormatException: The input string 'abc' was not in a correct format.",
        '   at System.Number.ThrowFormatException[TChar](ReadOnlySpan`1 value)',
        '   at System.Int32.Parse(String s)',
        '   at Acme.Shipping.OrderShippedHandler.Handle(OrderShipped message) in /src/Acme.Shipping/OrderShippedHandler.cs:line 19',
        '   at EasyNetQ.Consumer.HandlerRunner.InvokeUserMessageHandlerInternalAsync(ConsumerExecutionContext context, CancellationToken cancellationToken)',
      ].join('\n'),
      Message: '{"OrderId":"ORD-1001","Carrier":"DHL","Weight":"abc"}',
      DateTime: '2024-03-01T10:15:30.1234567Z',
      BasicProperties: {
        ContentType: 'application/json',
        Headers: {},
        DeliveryMode: 2,
        CorrelationId: 'c0ffee',
        MessageId: 'm-1',
        Type: 'Acme.Messages.OrderShipped, Acme.Messages',
        AppId: 'shipping-service',
      },
    }),
  ),
})

// --- Rebus error queue (docs/framework-headers.md#rebus) ----------------------------------------------------------

const rebusBlock = (time: string) =>
  `${time}: System.Net.Http.HttpRequestException: Response status code does not indicate success: 503 (Service Unavailable).\r\n` +
  '   at System.Net.Http.HttpResponseMessage.EnsureSuccessStatusCode()\r\n' +
  '   at Acme.Inventory.StockClient.ReserveAsync(Guid sku) in /src/Acme.Inventory/StockClient.cs:line 44\r\n' +
  '   at Acme.Inventory.ReserveStockHandler.Handle(ReserveStock message) in /src/Acme.Inventory/ReserveStockHandler.cs:line 21\r\n' +
  '   at Rebus.Pipeline.Receive.HandlerInvoker`1.Invoke()'

const rebus = delivery({
  queue: 'error',
  headers: {
    'rbs2-msg-id': '6d8b4a22-2c3f-4b6e-9f0a-1b2c3d4e5f60',
    'rbs2-msg-type': 'Acme.Messages.ReserveStock, Acme.Messages',
    'rbs2-corr-id': '6d8b4a22-2c3f-4b6e-9f0a-1b2c3d4e5f60',
    'rbs2-source-queue': 'inventory',
    'rbs2-error-details':
      '3 unhandled exceptions: ' +
      [rebusBlock('02/13/2024 10:15:28 +00:00'), rebusBlock('02/13/2024 10:15:29 +00:00'), rebusBlock('02/13/2024 10:15:30 +00:00')].join(
        '\r\n\r\n',
      ),
  },
})

// --- Wolverine enhanced dead lettering (docs/framework-headers.md#wolverine) ----------------------------------

const wolverine = delivery({
  queue: 'wolverine-dead-letter-queue',
  properties: { type: 'Acme.Payments.ChargeCard', messageId: '018e0a1b-0000-7000-8000-000000000042' },
  headers: {
    'exception-type': 'Acme.Payments.CardDeclinedException',
    'exception-message': 'Card ending 4242 declined by issuer',
    'exception-stack': [
      '   at Acme.Payments.ChargeHandler.Handle(ChargeCard command, IPaymentGateway gateway) in /src/Payments/ChargeHandler.cs:line 40',
      '   at Internal.Generated.WolverineHandlers.ChargeCardHandler1737075.HandleAsync(MessageContext context, CancellationToken cancellation)',
      '   at Wolverine.Runtime.Handlers.Executor.ExecuteAsync(MessageContext context, CancellationToken cancellation)',
    ].join('\n'),
    'failed-at': '1709288130123',
    'original-destination': 'rabbitmq://queue/payments',
    attempts: '3',
    source: 'checkout-api',
  },
})

// --- Symfony Messenger, Symfony serializer (stamps as headers) (docs/framework-headers.md#symfony-messenger) ---

const symfonyJson = delivery({
  queue: 'failed',
  properties: { contentType: 'application/json' },
  headers: {
    type: 'App\\Message\\SendInvoice',
    'X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\BusNameStamp': '[{"busName":"messenger.bus.default"}]',
    'X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\ErrorDetailsStamp': JSON.stringify([
      {
        exceptionClass: 'App\\Exception\\InvoiceValidationException',
        exceptionCode: 0,
        exceptionMessage: 'Invoice 9912 has a negative total',
        flattenException: {
          message: 'Invoice 9912 has a negative total',
          code: 0,
          class: 'App\\Exception\\InvoiceValidationException',
          file: '/var/www/src/Invoice/Validator.php',
          line: 31,
          previous: null,
          trace: [],
          trace_as_string: [
            '#0 /var/www/src/MessageHandler/SendInvoiceHandler.php(27): App\\Invoice\\Validator->validate(Object(App\\Entity\\Invoice))',
            '#1 /var/www/vendor/symfony/messenger/Middleware/HandleMessageMiddleware.php(152): App\\MessageHandler\\SendInvoiceHandler->__invoke(Object(App\\Message\\SendInvoice))',
            '#2 /var/www/vendor/symfony/messenger/Middleware/SendMessageMiddleware.php(71): Symfony\\Component\\Messenger\\Middleware\\HandleMessageMiddleware->handle(Object(Symfony\\Component\\Messenger\\Envelope), Object(Symfony\\Component\\Messenger\\Middleware\\StackMiddleware))',
            '#3 {main}',
          ].join('\n'),
        },
      },
    ]),
    'X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\RedeliveryStamp':
      '[{"retryCount":3,"redeliveredAt":"2024-03-01T10:15:20+00:00"},{"retryCount":0,"redeliveredAt":"2024-03-01T10:15:30+00:00"}]',
    'X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\SentToFailureTransportStamp': '[{"originalReceiverName":"async"}]',
  },
})

// --- Symfony Messenger, default PhpSerializer (stamps inside the body) -----------------------------------------

/** Builds PHP serialize() output; lengths are UTF-8 byte counts, as PHP writes them. */
const php = {
  s: (v: string) => `s:${Buffer.byteLength(v)}:"${v}";`,
  i: (v: number) => `i:${v};`,
  prop: (cls: string, name: string) => php.s(`\0${cls}\0${name}`),
  obj: (cls: string, props: string[]) => `O:${Buffer.byteLength(cls)}:"${cls}":${props.length / 2}:{${props.join('')}}`,
  arr: (items: string[]) => `a:${items.length / 2}:{${items.join('')}}`,
}
/** PHP addslashes(): backslash, quotes and NUL are escaped. */
const addslashes = (s: string) => s.replace(/[\\"']/g, (c) => `\\${c}`).replace(/\0/g, '\\0')
const ERR = 'Symfony\\Component\\Messenger\\Stamp\\ErrorDetailsStamp'
const RED = 'Symfony\\Component\\Messenger\\Stamp\\RedeliveryStamp'
const ENV = 'Symfony\\Component\\Messenger\\Envelope'
const serializedEnvelope = php.obj(ENV, [
  php.prop(ENV, 'stamps'),
  php.arr([
    php.s(RED),
    php.arr([php.i(0), php.obj(RED, [php.prop(RED, 'retryCount'), php.i(2)]), php.i(1), php.obj(RED, [php.prop(RED, 'retryCount'), php.i(0)])]),
    php.s(ERR),
    php.arr([
      php.i(0),
      php.obj(ERR, [
        php.prop(ERR, 'exceptionClass'),
        php.s('App\\Exception\\PdfRenderException'),
        php.prop(ERR, 'exceptionCode'),
        php.i(0),
        php.prop(ERR, 'exceptionMessage'),
        php.s('Could not render "facture-n°42.pdf": font missing'),
        php.prop(ERR, 'flattenException'),
        'N;',
      ]),
    ]),
  ]),
  php.prop(ENV, 'message'),
  php.obj('App\\Message\\RenderInvoice', [php.s('invoiceId'), php.i(42)]),
])

const symfonyPhp = delivery({
  queue: 'failed',
  properties: { contentType: 'text/plain' },
  headers: {},
  body: Buffer.from(addslashes(serializedEnvelope), 'utf8'),
})

// --- Celery, Brighter, plain DLX, Lazarus' own headers ------------------------------------------------------

const celery = delivery({
  queue: 'celery.dlq',
  exchange: 'celery.dlx',
  routingKey: 'celery',
  properties: { correlationId: 'b6f1c5a0-8c7e-4b8e-9a3c-0f1e2d3c4b5a' },
  headers: {
    lang: 'py',
    task: 'billing.tasks.charge',
    id: 'b6f1c5a0-8c7e-4b8e-9a3c-0f1e2d3c4b5a',
    root_id: 'b6f1c5a0-8c7e-4b8e-9a3c-0f1e2d3c4b5a',
    retries: 2,
    origin: 'gen42@worker-1',
    'x-death': [
      { count: 1, reason: 'rejected', queue: 'celery', time: T('2024-03-01T10:15:30Z'), exchange: 'celery', 'routing-keys': ['celery'] },
    ],
    'x-first-death-exchange': 'celery',
    'x-first-death-queue': 'celery',
    'x-first-death-reason': 'rejected',
  },
})

const brighter = delivery({
  queue: 'orders.place.dlq',
  exchange: 'paramore.brighter.exchange.dlq',
  routingKey: 'orders.place.dlq',
  properties: { type: 'application/json' },
  headers: {
    MessageId: '7b0c5e2a-1d3f-4a5b-8c9d-0e1f2a3b4c5d',
    MessageType: 'MT_COMMAND',
    Topic: 'orders.place',
    HandledCount: 3,
    CorrelationId: '7b0c5e2a-1d3f-4a5b-8c9d-0e1f2a3b4c5d',
    'x-death': [
      {
        count: 1,
        reason: 'rejected',
        queue: 'orders.place',
        time: T('2024-03-01T10:15:30Z'),
        exchange: 'paramore.brighter.exchange',
        'routing-keys': ['orders.place'],
      },
    ],
    'x-first-death-exchange': 'paramore.brighter.exchange',
    'x-first-death-queue': 'orders.place',
    'x-first-death-reason': 'rejected',
  },
})

const retryTopology = delivery({
  queue: 'app.dlq',
  exchange: 'app.dlx',
  routingKey: 'job.created',
  properties: { appId: 'jobs-worker', type: 'JobCreated' },
  headers: {
    'x-death': [
      {
        count: 3,
        reason: 'expired',
        queue: 'app.retry.30s',
        time: T('2024-03-01T10:16:00Z'),
        exchange: 'app.retry',
        'routing-keys': ['job.created'],
        'original-expiration': '30000',
      },
      { count: 4, reason: 'rejected', queue: 'app.work', time: T('2024-03-01T10:15:30Z'), exchange: 'app', 'routing-keys': ['job.created'] },
    ],
    'x-first-death-exchange': 'app',
    'x-first-death-queue': 'app.work',
    'x-first-death-reason': 'rejected',
    'x-last-death-exchange': 'app.retry',
    'x-last-death-queue': 'app.retry.30s',
    'x-last-death-reason': 'expired',
  },
})

const quorumDeliveryLimit = delivery({
  queue: 'payments.dlq',
  exchange: 'payments.dlx',
  routingKey: 'payment.requested',
  headers: {
    'x-death': [
      {
        count: 1,
        reason: 'delivery_limit',
        queue: 'payments.work',
        time: T('2024-03-01T10:15:30Z'),
        exchange: 'payments',
        'routing-keys': ['payment.requested'],
      },
    ],
    'x-first-death-exchange': 'payments',
    'x-first-death-queue': 'payments.work',
    'x-first-death-reason': 'delivery_limit',
    'x-delivery-count': 20,
  },
})

const NODE_STACK = [
  'ZodError: [{"code":"invalid_type","expected":"string","received":"undefined","path":["email"],"message":"Required"}]',
  '    at get error (/app/node_modules/zod/lib/types.js:55:31)',
  '    at ZodObject.parse (/app/node_modules/zod/lib/types.js:131:22)',
  '    at parseSignup (/app/dist/handlers/signup.js:14:28)',
  '    at Consumer.handle (/app/dist/consumer.js:41:9)',
  '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
].join('\n')

const lazarusOwn = delivery({
  queue: 'signup.dlq',
  exchange: 'signup.dlx',
  routingKey: 'user.signup',
  properties: { appId: 'ignored-app-id' },
  headers: {
    'x-error-type': 'ZodError',
    'x-error-message': 'Required at email',
    'x-error-stack': NODE_STACK,
    'x-service': 'signup-worker',
    'x-service-version': '1.4.2',
    'x-entity-key': 'user-991',
    'x-death': [
      { count: 2, reason: 'rejected', queue: 'signup.work', time: T('2024-03-01T10:15:30Z'), exchange: 'signup', 'routing-keys': ['user.signup'] },
    ],
    'x-first-death-exchange': 'signup',
    'x-first-death-queue': 'signup.work',
    'x-first-death-reason': 'rejected',
  },
})

type Expected = {
  framework: Framework
  errorType: string | null
  errorMessage: string | null
  stackIncludes: string | null
  origin: { exchange: string | null; routingKeys: string[]; queue: string | null }
  attempts: number | null
  failedAt: Date | null
  service: string | null
  serviceVersion: string | null
  failureKind: FailureKind
  titleStartsWith: string
  entityKey?: string | null
  messageType?: string | null
}

const cases: Array<[string, DeliveryView, Expected]> = [
  [
    'Spring AMQP RepublishMessageRecoverer',
    springAmqp,
    {
      framework: 'spring-amqp',
      errorType: 'com.acme.orders.InvalidOrderException',
      errorMessage: 'Order 48213 has no line items',
      stackIncludes: 'Caused by: com.acme.orders.InvalidOrderException',
      origin: { exchange: 'orders', routingKeys: ['order.placed'], queue: null },
      attempts: null,
      failedAt: null,
      service: 'order-service',
      serviceVersion: null,
      failureKind: 'exhausted',
      titleStartsWith: 'InvalidOrderException: Order <int> has no line items',
      messageType: 'com.acme.orders.OrderPlaced',
    },
  ],
  [
    'Spring Cloud Stream republishToDlq',
    springCloudStream,
    {
      framework: 'spring-cloud-stream',
      errorType: 'org.springframework.web.client.HttpServerErrorException$ServiceUnavailable',
      errorMessage: '503 Service Unavailable: "upstream connect error"',
      stackIncludes: 'PaymentClient.charge',
      origin: { exchange: 'orders', routingKeys: ['orders'], queue: 'orders.billing' },
      attempts: 1,
      failedAt: null,
      service: null,
      serviceVersion: null,
      failureKind: 'transient',
      titleStartsWith: 'HttpServerErrorException$ServiceUnavailable: <int> Service Unavailable: <str>',
    },
  ],
  [
    'MassTransit _error queue',
    massTransit,
    {
      framework: 'masstransit',
      errorType: 'System.TimeoutException',
      errorMessage: 'The operation has timed out after 00:00:30.',
      stackIncludes: 'ChargeCardConsumer.Consume',
      origin: { exchange: 'charge-card', routingKeys: [], queue: 'charge-card' },
      attempts: 5,
      failedAt: T('2024-03-01T10:15:30.123Z'),
      service: 'Acme.Billing.Worker',
      serviceVersion: '2.14.0.0',
      failureKind: 'transient',
      titleStartsWith: 'TimeoutException: The operation has timed out after <date>.',
      messageType: 'Acme.Contracts.ChargeCard',
    },
  ],
  [
    'NServiceBus error queue',
    nServiceBus,
    {
      framework: 'nservicebus',
      errorType: 'Npgsql.PostgresException',
      errorMessage: '23505: duplicate key value violates unique constraint "orders_pkey"',
      stackIncludes: 'OrderRepository.SaveAsync',
      origin: { exchange: null, routingKeys: [], queue: 'Sales' },
      attempts: null,
      failedAt: T('2024-03-01T10:15:30.123Z'),
      service: 'Sales',
      serviceVersion: null,
      failureKind: 'exhausted',
      titleStartsWith: 'PostgresException: <int>: duplicate key value violates unique constraint <str>',
      messageType: 'Acme.Messages.PlaceOrder',
    },
  ],
  [
    'EasyNetQ wrapped error',
    easyNetQ,
    {
      framework: 'easynetq',
      errorType: 'System.FormatException',
      errorMessage: "The input string 'abc' was not in a correct format.",
      stackIncludes: 'OrderShippedHandler.Handle',
      origin: {
        exchange: 'Acme.Messages.OrderShipped:Acme.Messages',
        routingKeys: ['Acme.Messages.OrderShipped:Acme.Messages'],
        queue: 'Acme.Messages.OrderShipped:Acme.Messages_shipping',
      },
      attempts: null,
      failedAt: T('2024-03-01T10:15:30.123Z'),
      service: 'shipping-service',
      serviceVersion: null,
      failureKind: 'invalid',
      titleStartsWith: 'FormatException: The input string <str> was not in a correct format.',
      entityKey: 'ORD-1001',
      messageType: 'Acme.Messages.OrderShipped, Acme.Messages',
    },
  ],
  [
    'Rebus error queue',
    rebus,
    {
      framework: 'rebus',
      errorType: 'System.Net.Http.HttpRequestException',
      errorMessage: 'Response status code does not indicate success: 503 (Service Unavailable).',
      stackIncludes: '3 unhandled exceptions',
      origin: { exchange: null, routingKeys: [], queue: 'inventory' },
      attempts: 3,
      failedAt: T('2024-02-13T10:15:30Z'),
      service: 'inventory',
      serviceVersion: null,
      failureKind: 'transient',
      titleStartsWith: 'HttpRequestException: Response status code does not indicate success: <int> (Service Unavailable).',
      messageType: 'Acme.Messages.ReserveStock',
    },
  ],
  [
    'Wolverine enhanced dead lettering',
    wolverine,
    {
      framework: 'wolverine',
      errorType: 'Acme.Payments.CardDeclinedException',
      errorMessage: 'Card ending 4242 declined by issuer',
      stackIncludes: 'ChargeHandler.Handle',
      origin: { exchange: null, routingKeys: [], queue: 'payments' },
      attempts: 3,
      failedAt: T('2024-03-01T10:15:30.123Z'),
      service: null,
      serviceVersion: null,
      failureKind: 'exhausted',
      titleStartsWith: 'CardDeclinedException: Card ending <int> declined by issuer',
      messageType: 'Acme.Payments.ChargeCard',
    },
  ],
  [
    'Symfony Messenger (JSON stamp headers)',
    symfonyJson,
    {
      framework: 'symfony',
      errorType: 'App\\Exception\\InvoiceValidationException',
      errorMessage: 'Invoice 9912 has a negative total',
      stackIncludes: 'SendInvoiceHandler->__invoke',
      origin: { exchange: null, routingKeys: [], queue: null },
      attempts: 4,
      failedAt: T('2024-03-01T10:15:30Z'),
      service: null,
      serviceVersion: null,
      failureKind: 'invalid',
      titleStartsWith: 'InvoiceValidationException: Invoice <int> has a negative total',
      messageType: 'App\\Message\\SendInvoice',
    },
  ],
  [
    'Symfony Messenger (PhpSerializer body)',
    symfonyPhp,
    {
      framework: 'symfony',
      errorType: 'App\\Exception\\PdfRenderException',
      errorMessage: 'Could not render "facture-n°42.pdf": font missing',
      stackIncludes: null,
      origin: { exchange: null, routingKeys: [], queue: null },
      attempts: 3,
      failedAt: null,
      service: null,
      serviceVersion: null,
      failureKind: 'exhausted',
      titleStartsWith: 'PdfRenderException: Could not render <str>: font missing',
    },
  ],
  [
    'Celery reject into a DLX',
    celery,
    {
      framework: 'celery',
      errorType: null,
      errorMessage: null,
      stackIncludes: null,
      origin: { exchange: 'celery', routingKeys: ['celery'], queue: 'celery' },
      attempts: 1,
      failedAt: T('2024-03-01T10:15:30Z'),
      service: null,
      serviceVersion: null,
      failureKind: 'exhausted',
      titleStartsWith: 'no error metadata: rejected in celery (charge)',
      messageType: 'billing.tasks.charge',
    },
  ],
  [
    'Brighter reject into a DLX',
    brighter,
    {
      framework: 'brighter',
      errorType: null,
      errorMessage: null,
      stackIncludes: null,
      origin: { exchange: 'paramore.brighter.exchange', routingKeys: ['orders.place'], queue: 'orders.place' },
      attempts: 1,
      failedAt: T('2024-03-01T10:15:30Z'),
      service: null,
      serviceVersion: null,
      failureKind: 'exhausted',
      titleStartsWith: 'no error metadata: rejected in orders.place',
      messageType: 'orders.place',
    },
  ],
  [
    'plain DLX behind a TTL retry topology',
    retryTopology,
    {
      framework: 'plain-dlx',
      errorType: null,
      errorMessage: null,
      stackIncludes: null,
      origin: { exchange: 'app', routingKeys: ['job.created'], queue: 'app.work' },
      attempts: 4,
      failedAt: T('2024-03-01T10:16:00Z'),
      service: 'jobs-worker',
      serviceVersion: null,
      failureKind: 'exhausted',
      titleStartsWith: 'no error metadata: rejected in app.work (JobCreated)',
      messageType: 'JobCreated',
    },
  ],
  [
    'plain DLX from a quorum queue delivery limit',
    quorumDeliveryLimit,
    {
      framework: 'plain-dlx',
      errorType: null,
      errorMessage: null,
      stackIncludes: null,
      origin: { exchange: 'payments', routingKeys: ['payment.requested'], queue: 'payments.work' },
      attempts: 20,
      failedAt: T('2024-03-01T10:15:30Z'),
      service: null,
      serviceVersion: null,
      failureKind: 'delivery-limit',
      titleStartsWith: 'no error metadata: delivery_limit in payments.work',
    },
  ],
  [
    "Lazarus' own headers",
    lazarusOwn,
    {
      framework: 'lazarus',
      errorType: 'ZodError',
      errorMessage: 'Required at email',
      stackIncludes: 'parseSignup',
      origin: { exchange: 'signup', routingKeys: ['user.signup'], queue: 'signup.work' },
      attempts: 2,
      failedAt: T('2024-03-01T10:15:30Z'),
      service: 'signup-worker',
      serviceVersion: '1.4.2',
      failureKind: 'invalid',
      titleStartsWith: 'ZodError: Required at email',
      entityKey: 'user-991',
    },
  ],
]

describe('normaliseDelivery: one realistic delivery per framework', () => {
  it.each(cases)('%s', (_name, input, expected) => {
    const result = normaliseDelivery(input, { now: NOW })
    expect(result.framework).toBe(expected.framework)
    expect(result.errorType).toBe(expected.errorType)
    expect(result.errorMessage).toBe(expected.errorMessage)
    if (expected.stackIncludes === null) expect(result.errorStack).toBeNull()
    else expect(result.errorStack).toContain(expected.stackIncludes)
    expect(result.origin).toEqual(expected.origin)
    expect(result.attempts).toBe(expected.attempts)
    expect(result.failedAt).toEqual(expected.failedAt)
    expect(result.service).toBe(expected.service)
    expect(result.serviceVersion).toBe(expected.serviceVersion)
    expect(result.failureKind).toBe(expected.failureKind)
    expect(result.title.startsWith(expected.titleStartsWith)).toBe(true)
    expect(result.title.length).toBeLessThanOrEqual(120)
    expect(result.signature).toMatch(/^v1:[0-9a-f]{16}$/)
    if (expected.entityKey !== undefined) expect(result.entityKey).toBe(expected.entityKey)
    if (expected.messageType !== undefined) expect(result.messageType).toBe(expected.messageType)
  })
})

describe('normaliseDelivery: details', () => {
  it('hashes only in-app frames of the root cause for Spring', () => {
    const a = normaliseDelivery(springAmqp, { now: NOW })
    const b = normaliseDelivery(
      {
        ...springAmqp,
        headers: {
          ...springAmqp.headers,
          'x-exception-message': 'Order 99 has no line items',
          'x-exception-stacktrace': SPRING_TRACE.replace(/48213/g, '99').replace(/\.java:\d+/g, '.java:1'),
        },
      },
      { now: NOW },
    )
    expect(b.signature).toBe(a.signature)
  })

  it('records provenance for derived values', () => {
    const result = normaliseDelivery(massTransit, { now: NOW })
    expect(result.provenance).toMatchObject({
      errorType: 'MT-Fault-ExceptionType',
      attempts: 'MT-Fault-RetryCount + 1',
      failedAt: 'MT-Fault-Timestamp',
      service: 'MT-Host-Assembly',
      serviceVersion: 'MT-Host-AssemblyVersion',
      'origin.queue': 'MT-Fault-InputAddress',
    })
  })

  it('lets Lazarus headers win over framework values', () => {
    const result = normaliseDelivery(
      {
        ...massTransit,
        headers: { ...massTransit.headers, 'x-error-type': 'Acme.GatewayDown', 'x-failure-kind': 'expired', 'x-service': 'billing' },
      },
      { now: NOW },
    )
    expect(result.framework).toBe('masstransit')
    expect(result.errorType).toBe('Acme.GatewayDown')
    expect(result.errorMessage).toBe('The operation has timed out after 00:00:30.')
    expect(result.failureKind).toBe('expired')
    expect(result.service).toBe('billing')
    expect(result.serviceVersion).toBe('2.14.0.0')
  })

  it('ignores an unknown x-failure-kind and flags it', () => {
    const result = normaliseDelivery({ ...massTransit, headers: { ...massTransit.headers, 'x-failure-kind': 'catastrophic' } }, { now: NOW })
    expect(result.failureKind).toBe('transient')
    expect(result.flags).toContain('failure-kind-header-invalid')
  })

  it('treats a Spring AMQP ≥ 4.0.5 message without a trace as a degraded signature', () => {
    const headers = { 'x-exception-message': 'Order 7 rejected', 'x-original-exchange': '', 'x-original-routingKey': 'orders.in' }
    const a = normaliseDelivery(delivery({ queue: 'orders.in.dlq2', routingKey: 'error.orders.in', headers }), { now: NOW })
    const b = normaliseDelivery(
      delivery({ queue: 'x', routingKey: 'error.other', headers: { ...headers, 'x-original-routingKey': 'other.in' } }),
      { now: NOW },
    )
    expect(a.framework).toBe('spring-amqp')
    expect(a.errorType).toBeNull()
    expect(a.title).toBe('Order <int> rejected')
    // Default exchange: the routing key is the queue name.
    expect(a.origin.queue).toBe('orders.in')
    expect(a.signature).not.toBe(b.signature)
  })

  it('unwraps a Spring trace whose root cause was truncated by hashing the message', () => {
    const truncated = SPRING_TRACE.split('Caused by:')[0]
    const make = (message: string) =>
      normaliseDelivery(
        delivery({ routingKey: 'error.x', headers: { 'x-exception-message': message, 'x-exception-stacktrace': truncated } }),
        { now: NOW },
      )
    const a = make('Order 1 has no line items')
    expect(a.errorType).toBe('org.springframework.amqp.rabbit.support.ListenerExecutionFailedException')
    expect(make('Order 2 has no line items').signature).toBe(a.signature)
    expect(make('Customer blocked').signature).not.toBe(a.signature)
  })

  it('reads the MassTransit skipped queue without fault headers', () => {
    const result = normaliseDelivery(
      delivery({ queue: 'orders_skipped', headers: { 'MT-Reason': 'dead-letter', 'MT-Host-MachineName': 'web-1' } }),
      { now: NOW },
    )
    expect(result.framework).toBe('masstransit')
    expect(result.errorType).toBeNull()
    expect(result.origin.queue).toBe('orders')
    expect(result.service).toBe('web-1')
    expect(result.failureKind).toBe('unknown')
    expect(result.title).toBe('no error metadata: dead-letter in orders')
  })

  it('picks the most frequent Rebus block and flags culture-ambiguous times', () => {
    const other =
      '03/01/2024 10:15:31 +00:00: Rebus.Exceptions.RebusApplicationException: Received message with native delivery count header value = 6 thus exceeding MAX number of delivery attempts (which is 5)'
    const result = normaliseDelivery(
      delivery({
        headers: {
          'rbs2-error-details': `4 unhandled exceptions: ${[other, rebusBlock('03/01/2024 10:15:28 +00:00'), rebusBlock('03/01/2024 10:15:29 +00:00')].join('\n\n')}`,
          'rbs2-source-queue': 'inventory',
        },
      }),
      { now: NOW },
    )
    expect(result.errorType).toBe('System.Net.Http.HttpRequestException')
    expect(result.attempts).toBe(4)
    expect(result.failedAt).toEqual(T('2024-03-01T10:15:31Z'))
    expect(result.flags).toContain('failed-at-ambiguous')
  })

  it('reads day-first Rebus times from a German host', () => {
    const result = normaliseDelivery(
      delivery({ headers: { 'rbs2-error-details': `1 unhandled exceptions: ${rebusBlock('01.03.2024 11:15:30 +01:00')}` } }),
      { now: NOW },
    )
    expect(result.failedAt).toEqual(T('2024-03-01T10:15:30Z'))
    expect(result.flags).not.toContain('failed-at-ambiguous')
  })

  it('ignores a framework failure time from the future', () => {
    const result = normaliseDelivery(
      { ...massTransit, headers: { ...massTransit.headers, 'MT-Fault-Timestamp': '2030-01-01T00:00:00Z' } },
      { now: NOW },
    )
    expect(result.failedAt).toBeNull()
    expect(result.flags).toContain('failed-at-suspicious')
  })

  it('does not read the expiry of a Symfony delay queue as the failure', () => {
    const delayed = {
      ...symfonyPhp,
      headers: {
        'x-death': [{ count: 3, reason: 'expired', queue: 'delay_messages__5000', exchange: 'delays', 'routing-keys': ['delay_x'], time: T('2024-03-01T10:15:00Z') }],
        'x-first-death-queue': 'delay_messages__5000',
        'x-first-death-reason': 'expired',
        'x-first-death-exchange': 'delays',
      },
    }
    const result = normaliseDelivery(delayed, { now: NOW })
    expect(result.deathReason).toBe('expired')
    expect(result.failureKind).toBe('exhausted')
  })

  it('keeps replay lineage', () => {
    const result = normaliseDelivery(
      { ...retryTopology, headers: { ...retryTopology.headers, 'x-lazarus-origin-id': 'dl_123', 'x-lazarus-replay-count': 2 } },
      { now: NOW },
    )
    expect(result.lineage).toEqual({ originId: 'dl_123', replayCount: 2 })
    expect(normaliseDelivery(retryTopology, { now: NOW }).lineage).toEqual({ originId: null, replayCount: 0 })
  })

  it('reports an empty delivery as unknown with no error metadata', () => {
    const result = normaliseDelivery(delivery({ queue: 'mystery.dlq', body: Buffer.alloc(0) }), { now: NOW })
    expect(result).toMatchObject({
      framework: 'unknown',
      failureKind: 'unknown',
      errorType: null,
      attempts: null,
      failedAt: null,
      title: 'no error metadata: unknown reason in mystery.dlq',
      flags: [],
    })
  })

  it('replaces NUL characters, which PostgreSQL text cannot store', () => {
    const result = normaliseDelivery(delivery({ headers: { 'x-error-type': 'Bad\u0000Type', 'x-error-message': 'a\u0000b' } }), {
      now: NOW,
    })
    expect(result.errorType).toBe('Bad\uFFFDType')
    expect(result.errorMessage).toBe('a\uFFFDb')
  })

  it('extends the not-in-app list through options', () => {
    const a = normaliseDelivery(nServiceBus, { now: NOW })
    const b = normaliseDelivery(nServiceBus, { now: NOW, notInAppPrefixes: ['Npgsql.'] })
    expect(a.signature).not.toBe(b.signature)
  })
})

describe('framework detection order (docs/framework-headers.md#detection-order)', () => {
  const cases: Array<[string, PlainHeaders, Framework]> = [
    ['NServiceBus beats MassTransit', { 'NServiceBus.FailedQ': 'a', 'MT-Reason': 'fault' }, 'nservicebus'],
    ['MassTransit beats Spring', { 'MT-Reason': 'fault', 'x-exception-message': 'x' }, 'masstransit'],
    ['Spring beats Rebus', { 'x-original-exchange': '', 'rbs2-error-details': 'x' }, 'spring-amqp'],
    ['Rebus beats Wolverine', { 'rbs2-error-details': 'x', 'exception-type': 'X', 'failed-at': '1' }, 'rebus'],
    ['Wolverine needs both headers', { 'exception-type': 'X' }, 'unknown'],
    ['Symfony by stamp header', { 'X-Message-Stamp-App\\Stamp': '[]' }, 'symfony'],
    ['Celery needs lang, task and id', { lang: 'py', task: 't', id: '1' }, 'celery'],
    ['Brighter', { HandledCount: 0, MessageType: 'MT_EVENT' }, 'brighter'],
    ['Lazarus after every framework', { 'x-error-message': 'x', 'x-death': [] }, 'lazarus'],
    ['plain DLX', { 'x-first-death-queue': 'q' }, 'plain-dlx'],
    ['nothing', {}, 'unknown'],
  ]
  it.each(cases)('%s', (_name, headers, framework) => {
    expect(normaliseDelivery(delivery({ headers }), { now: NOW }).framework).toBe(framework)
  })

  it('needs both the EasyNetQ type property and the wrapped body', () => {
    const typeOnly = delivery({ properties: { type: 'EasyNetQ.SystemMessages.Error, EasyNetQ' }, body: Buffer.from('not json') })
    expect(normaliseDelivery(typeOnly, { now: NOW }).framework).toBe('unknown')
  })

  it('tells Spring Cloud Stream from Spring AMQP', () => {
    const base = { 'x-exception-message': 'boom' }
    const spring = (queue: string, routingKey: string, headers: PlainHeaders = base) =>
      normaliseDelivery(delivery({ queue, routingKey, headers }), { now: NOW }).framework
    expect(spring('orders.errors', 'error.orders')).toBe('spring-amqp')
    expect(spring('orders.group.dlq', 'orders.group')).toBe('spring-cloud-stream')
    expect(spring('custom-dlq', 'x', { ...base, 'retry-count': 1 })).toBe('spring-cloud-stream')
    expect(spring('custom-dlq', 'x')).toBe('spring-amqp')
  })
})
