import type { BuilderObject } from './three-tier'

/** The part of an amqplib channel that declares objects; typed here so this module needs no broker client. */
export type DeclaringChannel = {
  assertExchange(name: string, type: string, options: { durable: boolean; autoDelete: boolean; internal: boolean; arguments: Record<string, unknown> }): Promise<unknown>
  assertQueue(name: string, options: { durable: boolean; autoDelete: boolean; exclusive: boolean; arguments: Record<string, unknown> }): Promise<unknown>
  bindQueue(queue: string, source: string, pattern: string, args: Record<string, unknown>): Promise<unknown>
  bindExchange(destination: string, source: string, pattern: string, args: Record<string, unknown>): Promise<unknown>
}

/**
 * Declares builder objects in their order, on one channel: the same declarations the definitions file and the
 * `rabbitmqadmin` commands make (docs/topology-builder.md#applying-it). Used by the server's apply and by
 * `npm run demo:seed`. A refused declaration (PRECONDITION_FAILED) rejects and closes the channel; what was declared
 * before it stays.
 */
export async function declareObjects(channel: DeclaringChannel, objects: readonly BuilderObject[], onDeclared: (o: BuilderObject) => void = () => {}): Promise<void> {
  for (const o of objects) {
    if (o.kind === 'exchange') {
      await channel.assertExchange(o.name, o.exchangeType, { durable: o.durable, autoDelete: o.autoDelete, internal: o.internal, arguments: o.arguments })
    } else if (o.kind === 'queue') {
      await channel.assertQueue(o.name, { durable: o.durable, autoDelete: o.autoDelete, exclusive: o.exclusive, arguments: o.arguments })
    } else if (o.destinationType === 'queue') {
      await channel.bindQueue(o.destination, o.source, o.routingKey, o.arguments)
    } else {
      await channel.bindExchange(o.destination, o.source, o.routingKey, o.arguments)
    }
    onDeclared(o)
  }
}
