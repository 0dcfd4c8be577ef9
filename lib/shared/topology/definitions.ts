import { z } from 'zod'

/**
 * RabbitMQ's definitions format for one vhost: what `GET /api/definitions/{vhost}` returns and
 * `POST /api/definitions/{vhost}` imports (docs/topology-builder.md#definitions-and-commands). A per-vhost export carries no `vhost`
 * field on its objects and no `vhosts`, `users` or `permissions` lists.
 */

const argumentsSchema = z.record(z.string(), z.unknown())

export const definitionQueueSchema = z.object({
  name: z.string(),
  durable: z.boolean(),
  auto_delete: z.boolean(),
  arguments: argumentsSchema,
})

export const definitionExchangeSchema = z.object({
  name: z.string(),
  type: z.string(),
  durable: z.boolean(),
  auto_delete: z.boolean(),
  internal: z.boolean(),
  arguments: argumentsSchema,
})

export const definitionBindingSchema = z.object({
  source: z.string(),
  destination: z.string(),
  destination_type: z.enum(['queue', 'exchange']),
  routing_key: z.string(),
  arguments: argumentsSchema,
})

export const vhostDefinitionsSchema = z.object({
  rabbit_version: z.string().optional(),
  parameters: z.array(z.unknown()).optional(),
  policies: z.array(z.unknown()),
  queues: z.array(definitionQueueSchema),
  exchanges: z.array(definitionExchangeSchema),
  bindings: z.array(definitionBindingSchema),
})

export type DefinitionQueue = z.infer<typeof definitionQueueSchema>
export type DefinitionExchange = z.infer<typeof definitionExchangeSchema>
export type DefinitionBinding = z.infer<typeof definitionBindingSchema>
export type VhostDefinitions = z.infer<typeof vhostDefinitionsSchema>
