import { createHash } from 'node:crypto'
import type { MessageFields, MessageProperties, Options } from 'amqplib'

/**
 * What popular frameworks leave on a message they give up on, reproduced for the demo. Shapes follow
 * docs/framework-headers.md (sections in brackets); anything it leaves open is kept plausible, not exact.
 */

export type FrameworkStyle = 'spring' | 'masstransit' | 'nservicebus' | 'rebus' | 'easynetq' | 'lazarus'

/** Lazarus' `x-failure-kind` values that an application can know about itself. */
export type FailureKind = 'invalid' | 'transient' | 'exhausted'

export type Headers = Record<string, unknown>

export type StackFrame = {
  /** Fully qualified function, as the language prints it (`com.acme.Foo.bar`, `Acme.Foo.Bar(String id)`, `bar`). */
  at: string
  file?: string
  line?: number
  column?: number
  /** .NET's `--- End of stack trace from previous location ---` between async continuations. */
  asyncBoundary?: boolean
}

export type ErrorInfo = { type: string; message: string; frames: readonly StackFrame[]; cause?: ErrorInfo }

export const frame = (at: string, file?: string, line?: number, column?: number): StackFrame => ({ at, file, line, column })

export const ASYNC_BOUNDARY: StackFrame = { at: '', asyncBoundary: true }

export type FailingService = { name: string; version: string; host: string; framework: FrameworkStyle }

export type Delivery = {
  content: Buffer
  fields: Pick<MessageFields, 'exchange' | 'routingKey'>
  properties: MessageProperties
}

/** Everything a failing consumer knows at the moment it stops retrying a delivery. */
export type FailureContext = {
  delivery: Delivery
  /** The queue the delivery failed in. */
  queue: string
  error: ErrorInfo
  /** Deliveries of this message to `queue` so far, this one included. */
  attempts: number
  failedAt: Date
  /** Time between attempts, to date the earlier ones in per-attempt logs (Rebus). */
  retryDelayMs: number
  service: FailingService
  /** Consumer or handler class that failed (MassTransit, NServiceBus). */
  handler: string
  /** Message type as the failing service names it. */
  messageType: string
  failureKind?: FailureKind
}

/** The message a framework publishes to its error queue in place of the failed delivery. */
export type DeadLetterCopy = { routingKey: string; content: Buffer; options: Options.Publish }

export type OutgoingMessage = { content: Buffer; options: Options.Publish & { headers: Headers } }

export type SenderContext = {
  framework: FrameworkStyle
  messageType: string
  /** Exchange the message is published to. */
  destination: string
  sentAt: Date
  sender: { endpoint: string; host: string }
}

// ---------------------------------------------------------------------------------------------------------------
// Stack traces, per language

const javaFrame = (f: StackFrame) => `\tat ${f.at}(${f.file ? (f.line ? `${f.file}:${f.line}` : f.file) : 'Unknown Source'})`

function commonTailLength(a: readonly string[], b: readonly string[]): number {
  let n = 0
  while (n < a.length && n < b.length && a[a.length - 1 - n] === b[b.length - 1 - n]) n++
  return n
}

/** `Throwable.printStackTrace()`: each cause prints only the frames it does not share with the exception enclosing it. */
export function javaStackTrace(error: ErrorInfo): string {
  let enclosing = error.frames.map(javaFrame)
  const lines = [`${error.type}: ${error.message}`, ...enclosing]
  for (let cause = error.cause; cause; cause = cause.cause) {
    const own = cause.frames.map(javaFrame)
    const shared = commonTailLength(own, enclosing)
    lines.push(`Caused by: ${cause.type}: ${cause.message}`, ...own.slice(0, own.length - shared))
    if (shared > 0) lines.push(`\t... ${shared} more`)
    enclosing = own
  }
  return lines.join('\n')
}

function dotnetFrame(f: StackFrame): string {
  if (f.asyncBoundary) return '--- End of stack trace from previous location ---'
  return `   at ${f.at}${f.file ? ` in ${f.file}:line ${f.line}` : ''}`
}

/** `Exception.StackTrace`: frames only. */
export const dotnetStackTrace = (frames: readonly StackFrame[]) => frames.map(dotnetFrame).join('\n')

/** `Exception.ToString()` on .NET 5+: type and message, inner exceptions inline, then the outer frames. */
export function dotnetToString(error: ErrorInfo): string {
  let text = `${error.type}: ${error.message}`
  if (error.cause) text += `\n ---> ${dotnetToString(error.cause)}\n   --- End of inner exception stack trace ---`
  return error.frames.length ? `${text}\n${dotnetStackTrace(error.frames)}` : text
}

function nodeFrame(f: StackFrame): string {
  const location = `${f.file}:${f.line ?? 1}:${f.column ?? 1}`
  return f.at ? `    at ${f.at} (${location})` : `    at ${location}`
}

export const nodeStack = (error: ErrorInfo) => [`${error.type}: ${error.message}`, ...error.frames.map(nodeFrame)].join('\n')

/** The framework's own frames sit below the application's, on every exception of the chain. */
function withFrameworkFrames(error: ErrorInfo, tail: readonly StackFrame[]): ErrorInfo {
  return { ...error, frames: [...error.frames, ...tail], cause: error.cause && withFrameworkFrames(error.cause, tail) }
}

function innermost(error: ErrorInfo): ErrorInfo {
  return error.cause ? innermost(error.cause) : error
}

// ---------------------------------------------------------------------------------------------------------------
// Framework frames (abridged to what a reader recognises)

const SPRING_CONTAINER: StackFrame[] = [
  frame('org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.actualInvokeListener', 'AbstractMessageListenerContainer.java', 1594),
  frame('org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.invokeListener', 'AbstractMessageListenerContainer.java', 1575),
  frame('org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.executeListenerAndHandleException', 'AbstractMessageListenerContainer.java', 1525),
  frame('org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.executeListener', 'AbstractMessageListenerContainer.java', 1499),
  frame('org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer.doReceiveAndExecute', 'SimpleMessageListenerContainer.java', 1085),
  frame('org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer.receiveAndExecute', 'SimpleMessageListenerContainer.java', 1021),
  frame('org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer$AsyncMessageProcessingConsumer.mainLoop', 'SimpleMessageListenerContainer.java', 1375),
  frame('org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer$AsyncMessageProcessingConsumer.run', 'SimpleMessageListenerContainer.java', 1281),
  frame('java.base/java.lang.Thread.run', 'Thread.java', 1583),
]

const SPRING_HANDLER_INVOCATION: StackFrame[] = [
  frame('java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke', 'DirectMethodHandleAccessor.java', 103),
  frame('java.base/java.lang.reflect.Method.invoke', 'Method.java', 580),
  frame('org.springframework.messaging.handler.invocation.InvocableHandlerMethod.doInvoke', 'InvocableHandlerMethod.java', 169),
  frame('org.springframework.messaging.handler.invocation.InvocableHandlerMethod.invoke', 'InvocableHandlerMethod.java', 119),
  frame('org.springframework.amqp.rabbit.listener.adapter.HandlerAdapter.invoke', 'HandlerAdapter.java', 75),
  frame('org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter.invokeHandler', 'MessagingMessageListenerAdapter.java', 277),
  frame('org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter.onMessage', 'MessagingMessageListenerAdapter.java', 149),
  frame('org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.doInvokeListener', 'AbstractMessageListenerContainer.java', 1692),
  ...SPRING_CONTAINER,
]

const SPRING_WRAPPER: StackFrame[] = [
  frame('org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.wrapToListenerExecutionFailedExceptionIfNeeded', 'AbstractMessageListenerContainer.java', 1789),
  frame('org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.doInvokeListener', 'AbstractMessageListenerContainer.java', 1700),
  ...SPRING_CONTAINER,
]

// MassTransit strips its DependencyInjection frames and the file names of its own frames
// (docs/framework-headers.md#masstransit).
const MASSTRANSIT_PIPELINE: StackFrame[] = [
  frame('MassTransit.Middleware.MethodConsumerMessageFilter`2.MassTransit.IFilter<MassTransit.ConsumerConsumeContext<TConsumer,TMessage>>.Send(ConsumerConsumeContext`2 context, IPipe`1 next)'),
  ASYNC_BOUNDARY,
  frame('MassTransit.Middleware.ConsumerMessageFilter`2.MassTransit.IFilter<MassTransit.ConsumeContext<TMessage>>.Send(ConsumeContext`1 context, IPipe`1 next)'),
]

const NSERVICEBUS_PIPELINE: StackFrame[] = [
  frame('NServiceBus.InvokeHandlerTerminator.Terminate(IInvokeHandlerContext context)', '/_/src/NServiceBus.Core/Pipeline/Incoming/InvokeHandlerTerminator.cs', 33),
  frame('NServiceBus.LoadHandlersConnector.Invoke(IIncomingLogicalMessageContext context, Func`2 stage)', '/_/src/NServiceBus.Core/Pipeline/Incoming/LoadHandlersConnector.cs', 49),
  frame('NServiceBus.DeserializeMessageConnector.Invoke(IIncomingPhysicalMessageContext context, Func`2 stage)', '/_/src/NServiceBus.Core/Pipeline/Incoming/DeserializeMessageConnector.cs', 31),
  frame('NServiceBus.TransportReceiveToPhysicalMessageConnector.Invoke(ITransportReceiveContext context, Func`2 next)', '/_/src/NServiceBus.Core/Pipeline/Incoming/TransportReceiveToPhysicalMessageConnector.cs', 35),
  frame('NServiceBus.Transport.RabbitMQ.MessagePump.Process(AsyncEventingBasicConsumer consumer, BasicDeliverEventArgs message, CancellationToken messageProcessingCancellationToken)', '/_/src/NServiceBus.Transport.RabbitMQ/Receiving/MessagePump.cs', 482),
]

const REBUS_PIPELINE: StackFrame[] = [
  frame('Rebus.Pipeline.Receive.DispatchIncomingMessageStep.Process(IncomingStepContext context, Func`1 next)', '/_/Rebus/Pipeline/Receive/DispatchIncomingMessageStep.cs', 61),
  frame('Rebus.Pipeline.Receive.ActivateHandlersStep.Process(IncomingStepContext context, Func`1 next)', '/_/Rebus/Pipeline/Receive/ActivateHandlersStep.cs', 47),
  frame('Rebus.Retry.Simple.DefaultRetryStep.Process(IncomingStepContext context, Func`1 next)', '/_/Rebus/Retry/Simple/DefaultRetryStep.cs', 104),
]

const EASYNETQ_RUNNER: StackFrame[] = [
  frame('EasyNetQ.Consumer.HandlerRunner.InvokeUserMessageHandlerInternalAsync(ConsumerExecutionContext context, CancellationToken cancellationToken)'),
]

const NODE_WORKER: StackFrame[] = [
  frame('process.processTicksAndRejections', 'node:internal/process/task_queues', 95, 5),
  frame('async Consumer.dispatch', '/app/node_modules/@acme/amqp-worker/dist/consumer.js', 141, 7),
]

// ---------------------------------------------------------------------------------------------------------------
// Value formats

/** .NET `DateTime.ToString("O")`: seven fractional digits. */
const dotnetRoundTrip = (at: Date) => at.toISOString().replace(/Z$/, '0000Z')

/** NServiceBus `DateTimeOffsetHelper`: `yyyy-MM-dd HH:mm:ss:ffffff Z`, colon before the microseconds. */
const nsbTime = (at: Date) => {
  const iso = at.toISOString()
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}:${iso.slice(20, 23)}000 Z`
}

/** `DateTimeOffset.ToString()` under the invariant culture, as Rebus prefixes each attempt. */
const invariantDateTimeOffset = (at: Date) => {
  const iso = at.toISOString()
  return `${iso.slice(5, 7)}/${iso.slice(8, 10)}/${iso.slice(0, 4)} ${iso.slice(11, 19)} +00:00`
}

const truncate = (text: string, max: number) => (text.length > max ? text.slice(0, max) : text)

const long = (value: number) => ({ '!': 'long', value })
const int = (value: number) => ({ '!': 'int', value })

/** A stable GUID-like id per host, as NServiceBus derives its host id from the machine. */
const hostId = (host: string) => createHash('md5').update(host).digest('hex')

// ---------------------------------------------------------------------------------------------------------------
// Forwarding the failed delivery

/**
 * The delivery's headers as a JVM or .NET client forwards them. amqplib decodes the broker's 64-bit `x-death`
 * counts to plain numbers and would re-encode them as a single byte; keep them `long` as the broker wrote them.
 */
function forwardedHeaders(headers: Headers | undefined): Headers {
  const copy: Headers = { ...headers }
  const deaths = copy['x-death']
  if (Array.isArray(deaths)) {
    copy['x-death'] = deaths.map((death: Headers) => ({ ...death, count: long(Number(death.count)) }))
  }
  return copy
}

/** Properties a republishing framework keeps. `expiration` is gone after dead-lettering; copies are persistent. */
function forwardedProperties(p: MessageProperties): Options.Publish {
  return {
    contentType: p.contentType,
    contentEncoding: p.contentEncoding,
    correlationId: p.correlationId,
    messageId: p.messageId,
    timestamp: p.timestamp,
    type: p.type,
    appId: p.appId,
    priority: p.priority,
    replyTo: p.replyTo,
    persistent: true,
  }
}

function republished(ctx: FailureContext, routingKey: string, failureHeaders: Headers): DeadLetterCopy {
  return {
    routingKey,
    content: ctx.delivery.content,
    options: {
      ...forwardedProperties(ctx.delivery.properties),
      headers: { ...forwardedHeaders(ctx.delivery.properties.headers), ...failureHeaders },
    },
  }
}

// ---------------------------------------------------------------------------------------------------------------
// One builder per framework

/**
 * Spring AMQP `RepublishMessageRecoverer` (docs/framework-headers.md#spring-amqp): the user's exception arrives
 * wrapped by the listener container.
 */
function springRecoverer(ctx: FailureContext): DeadLetterCopy {
  const wrapped: ErrorInfo = {
    type: 'org.springframework.amqp.rabbit.support.ListenerExecutionFailedException',
    message: 'Listener threw exception',
    frames: SPRING_WRAPPER,
    cause: withFrameworkFrames(ctx.error, SPRING_HANDLER_INVOCATION),
  }
  const { exchange, routingKey } = ctx.delivery.fields
  return republished(ctx, `error.${routingKey}`, {
    'x-exception-stacktrace': javaStackTrace(wrapped),
    // cause.getCause().getMessage(): the user's exception, one below the container's wrapper.
    'x-exception-message': ctx.error.message,
    'x-original-exchange': exchange,
    'x-original-routingKey': routingKey,
    // Spring reads the broker's x-death count into retry-count and writes it back as a Java Long (when non-zero).
    ...(ctx.attempts > 1 ? { 'retry-count': long(ctx.attempts - 1) } : {}),
  })
}

/**
 * MassTransit's move to `<queue>_error` (docs/framework-headers.md#masstransit): fault headers describe the base
 * (innermost) exception.
 */
function massTransitFault(ctx: FailureContext): DeadLetterCopy {
  const base = innermost(ctx.error)
  const { name, version, host } = ctx.service
  return republished(ctx, ctx.delivery.fields.routingKey, {
    'MT-Reason': 'fault',
    'MT-Fault-ExceptionType': base.type,
    'MT-Fault-Message': truncate(base.message, 2048),
    'MT-Fault-StackTrace': truncate(dotnetStackTrace([...base.frames, ...MASSTRANSIT_PIPELINE]), 2048),
    'MT-Fault-Timestamp': dotnetRoundTrip(ctx.failedAt),
    'MT-Fault-InputAddress': `rabbitmq://localhost/${ctx.queue}`,
    'MT-Fault-ConsumerType': ctx.handler,
    'MT-Fault-MessageType': ctx.messageType,
    // In-memory immediate retries (UseMessageRetry) inside each delivery; the broker's retries are in x-death.
    'MT-Fault-RetryCount': int(2),
    'MT-Host-MachineName': host,
    'MT-Host-ProcessName': name,
    'MT-Host-ProcessId': '1',
    'MT-Host-Assembly': name,
    'MT-Host-AssemblyVersion': `${version}.0`,
    'MT-Host-MassTransitVersion': '8.5.8.0',
    'MT-Host-FrameworkVersion': '8.0.11',
    'MT-Host-OperatingSystemVersion': 'Unix 6.6.87.2',
  })
}

/**
 * NServiceBus' move to the `error` queue (docs/framework-headers.md#nservicebus). It strips its retry counters, so
 * attempts live only in x-death.
 */
function nServiceBusFault(ctx: FailureContext): DeadLetterCopy {
  const error = withFrameworkFrames(ctx.error, NSERVICEBUS_PIPELINE)
  const { name, host } = ctx.service
  const handlerStart = new Date(ctx.failedAt.getTime() - 180)
  return republished(ctx, 'error', {
    'NServiceBus.ExceptionInfo.ExceptionType': error.type,
    ...(error.cause ? { 'NServiceBus.ExceptionInfo.InnerExceptionType': error.cause.type } : {}),
    'NServiceBus.ExceptionInfo.Message': truncate(error.message, 16_384),
    'NServiceBus.ExceptionInfo.Source': name,
    'NServiceBus.ExceptionInfo.StackTrace': dotnetToString(error),
    'NServiceBus.ExceptionInfo.Data.Message type': ctx.messageType,
    'NServiceBus.ExceptionInfo.Data.Handler type': ctx.handler,
    'NServiceBus.ExceptionInfo.Data.Handler start time': nsbTime(handlerStart),
    'NServiceBus.ExceptionInfo.Data.Handler failure time': nsbTime(ctx.failedAt),
    'NServiceBus.ExceptionInfo.Data.Handler canceled': 'False',
    'NServiceBus.ExceptionInfo.Data.Message ID': String(ctx.delivery.properties.messageId),
    'NServiceBus.ExceptionInfo.Data.Transport message ID': String(ctx.delivery.properties.messageId),
    'NServiceBus.ExceptionInfo.Data.Pipeline canceled': 'False',
    'NServiceBus.FailedQ': ctx.queue,
    'NServiceBus.TimeOfFailure': nsbTime(ctx.failedAt),
    'NServiceBus.ProcessingEndpoint': name,
    'NServiceBus.ProcessingMachine': host,
    '$.diagnostics.hostid': hostId(host),
    '$.diagnostics.hostdisplayname': host,
  })
}

/**
 * Rebus' move to `error` (docs/framework-headers.md#rebus): one `<time>: <ex.ToString()>` block per attempt it
 * tracked.
 */
function rebusErrorDetails(ctx: FailureContext): DeadLetterCopy {
  const trace = dotnetToString(withFrameworkFrames(ctx.error, REBUS_PIPELINE))
  const blocks = Array.from({ length: ctx.attempts }, (_, i) => {
    const at = new Date(ctx.failedAt.getTime() - (ctx.attempts - 1 - i) * ctx.retryDelayMs)
    return `${invariantDateTimeOffset(at)}: ${trace}`
  })
  return republished(ctx, 'error', {
    'rbs2-error-details': `${ctx.attempts} unhandled exceptions: ${blocks.join('\n\n')}`,
    'rbs2-source-queue': ctx.queue,
  })
}

/** JSON for EasyNetQ's `BasicProperties.Headers`: typed AMQP values become their plain value, bytes base64. */
function jsonHeaderValue(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return value.toString('base64')
  if (Array.isArray(value)) return value.map(jsonHeaderValue)
  if (value && typeof value === 'object') {
    if ('!' in value) return (value as { '!': string; value: unknown }).value
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonHeaderValue(v)]))
  }
  return value
}

/**
 * EasyNetQ's `DefaultConsumeErrorStrategy` (docs/framework-headers.md#easynetq): the failed message travels inside a
 * JSON `Error` envelope.
 */
function easyNetQError(ctx: FailureContext): DeadLetterCopy {
  const { content, fields, properties: p } = ctx.delivery
  const envelope = {
    RoutingKey: fields.routingKey,
    Exchange: fields.exchange,
    Queue: ctx.queue,
    Exception: dotnetToString(withFrameworkFrames(ctx.error, EASYNETQ_RUNNER)),
    Message: content.toString('utf8'),
    DateTime: dotnetRoundTrip(ctx.failedAt),
    BasicProperties: {
      ContentType: p.contentType ?? null,
      ContentEncoding: p.contentEncoding ?? null,
      Headers: jsonHeaderValue(p.headers ?? {}),
      DeliveryMode: p.deliveryMode ?? 0,
      Priority: p.priority ?? 0,
      CorrelationId: p.correlationId ?? null,
      ReplyTo: p.replyTo ?? null,
      Expiration: p.expiration ?? null,
      MessageId: p.messageId ?? null,
      Timestamp: p.timestamp ?? 0,
      Type: p.type ?? null,
      UserId: p.userId ?? null,
      AppId: p.appId ?? null,
      ClusterId: p.clusterId ?? null,
    },
  }
  return {
    routingKey: fields.routingKey,
    content: Buffer.from(JSON.stringify(envelope)),
    // A new message: no headers of its own, so the original x-death survives only inside the envelope.
    options: { persistent: true, type: 'EasyNetQ.SystemMessages.Error, EasyNetQ' },
  }
}

/**
 * Lazarus' own convention (docs/framework-headers.md#lazarus-own-headers) for apps that want to say more than their
 * framework does.
 */
function lazarusConvention(ctx: FailureContext): DeadLetterCopy {
  return republished(ctx, ctx.delivery.fields.routingKey, {
    'x-error-type': ctx.error.type,
    'x-error-message': ctx.error.message,
    'x-error-stack': nodeStack(withFrameworkFrames(ctx.error, NODE_WORKER)),
    ...(ctx.failureKind ? { 'x-failure-kind': ctx.failureKind } : {}),
    'x-service': ctx.service.name,
    'x-service-version': ctx.service.version,
  })
}

const builders: Record<FrameworkStyle, (ctx: FailureContext) => DeadLetterCopy> = {
  spring: springRecoverer,
  masstransit: massTransitFault,
  nservicebus: nServiceBusFault,
  rebus: rebusErrorDetails,
  easynetq: easyNetQError,
  lazarus: lazarusConvention,
}

export function buildDeadLetterCopy(ctx: FailureContext): DeadLetterCopy {
  return builders[ctx.service.framework](ctx)
}

// ---------------------------------------------------------------------------------------------------------------
// What each framework's sender puts on the original message

const isoWithOffset = (at: Date) => at.toISOString().replace(/Z$/, '0000+00:00')

/** `Acme.Billing.Messages.CapturePayment` → `urn:message:Acme.Billing.Messages:CapturePayment`. */
function massTransitUrn(messageType: string): string {
  const dot = messageType.lastIndexOf('.')
  return `urn:message:${messageType.slice(0, dot)}:${messageType.slice(dot + 1)}`
}

function massTransitEnvelope(message: OutgoingMessage, ctx: SenderContext): OutgoingMessage {
  const { messageId } = message.options
  const envelope = {
    messageId,
    requestId: null,
    correlationId: null,
    conversationId: messageId,
    initiatorId: null,
    sourceAddress: `rabbitmq://localhost/${ctx.sender.host}_bus_${hostId(ctx.sender.host).slice(0, 12)}?temporary=true`,
    destinationAddress: `rabbitmq://localhost/${ctx.destination}?type=topic`,
    messageType: [massTransitUrn(ctx.messageType)],
    message: JSON.parse(message.content.toString('utf8')),
    sentTime: dotnetRoundTrip(ctx.sentAt),
    headers: {},
    host: {
      machineName: ctx.sender.host,
      processName: ctx.sender.endpoint,
      processId: 1,
      assembly: ctx.sender.endpoint,
      assemblyVersion: '1.0.0.0',
      frameworkVersion: '8.0.11',
      massTransitVersion: '8.5.8.0',
      operatingSystemVersion: 'Unix 6.6.87.2',
    },
  }
  return {
    content: Buffer.from(JSON.stringify(envelope)),
    options: { ...message.options, contentType: 'application/vnd.masstransit+json' },
  }
}

function nServiceBusSendHeaders(message: OutgoingMessage, ctx: SenderContext): Headers {
  const { messageId, correlationId, contentType } = message.options
  return {
    'NServiceBus.MessageId': messageId,
    'NServiceBus.MessageIntent': 'Send',
    'NServiceBus.CorrelationId': correlationId,
    'NServiceBus.ConversationId': messageId,
    'NServiceBus.OriginatingEndpoint': ctx.sender.endpoint,
    'NServiceBus.OriginatingMachine': ctx.sender.host,
    '$.diagnostics.originating.hostid': hostId(ctx.sender.host),
    'NServiceBus.ContentType': contentType,
    'NServiceBus.EnclosedMessageTypes': `${ctx.messageType}, ${assemblyOf(ctx.messageType)}, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null`,
    'NServiceBus.TimeSent': nsbTime(ctx.sentAt),
    'NServiceBus.Version': '9.2.3',
  }
}

function rebusSendHeaders(message: OutgoingMessage, ctx: SenderContext): Headers {
  const { messageId, correlationId, contentType } = message.options
  return {
    'rbs2-msg-id': messageId,
    'rbs2-msg-type': `${ctx.messageType}, ${assemblyOf(ctx.messageType)}`,
    'rbs2-corr-id': correlationId,
    'rbs2-corr-seq': '0',
    'rbs2-sender-address': ctx.sender.endpoint,
    'rbs2-senttime': isoWithOffset(ctx.sentAt),
    'rbs2-intent': 'pub',
    'rbs2-content-type': String(contentType).replace('; ', ';'),
  }
}

/** Messages contracts live in an assembly named after their namespace. */
const assemblyOf = (messageType: string) => messageType.slice(0, messageType.lastIndexOf('.'))

/** Dresses an outgoing message the way the consuming service's framework expects its senders to. */
export function applySenderConventions(message: OutgoingMessage, ctx: SenderContext): OutgoingMessage {
  const { options } = message
  switch (ctx.framework) {
    case 'masstransit':
      return massTransitEnvelope(message, ctx)
    case 'nservicebus':
      return {
        content: message.content,
        options: {
          ...options,
          type: `${ctx.messageType}, ${assemblyOf(ctx.messageType)}`,
          headers: { ...options.headers, ...nServiceBusSendHeaders(message, ctx) },
        },
      }
    case 'rebus':
      return { content: message.content, options: { ...options, headers: { ...options.headers, ...rebusSendHeaders(message, ctx) } } }
    case 'easynetq':
      // EasyNetQ names the message type in the `type` property and sets no content type.
      return { content: message.content, options: { ...options, contentType: undefined, type: `${ctx.messageType}, ${assemblyOf(ctx.messageType)}` } }
    case 'spring':
      return { content: message.content, options: { ...options, headers: { ...options.headers, __TypeId__: ctx.messageType } } }
    case 'lazarus':
      return message
  }
}
