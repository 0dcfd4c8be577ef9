import 'server-only'
import type { Source } from '@/lib/generated/prisma/client'
import { entityKeyRuleSchema, entityVersionRuleSchema, replayTargetSchema, type SourceDto } from '@/lib/shared/schemas/source'
import type { QueueInfo } from '@/lib/server/platform/broker/management-api'

export function toSourceDto(row: Source, queue?: QueueInfo | null): SourceDto {
  const entityKey = entityKeyRuleSchema.safeParse(row.entityKey)
  const entityVersion = entityVersionRuleSchema.safeParse(row.entityVersion)
  const target = replayTargetSchema.safeParse(row.defaultTarget)
  return {
    id: row.id.toString(),
    kind: row.kind === 'hold' || row.kind === 'jetstream' ? row.kind : 'dlq',
    vhost: row.vhost,
    queue: row.queue,
    stream: row.stream,
    consumer: row.consumer,
    removeAfterCapture: row.removeAfterCapture,
    entityKey: entityKey.success ? entityKey.data : null,
    entityVersion: entityVersion.success ? entityVersion.data : null,
    orderSensitive: row.orderSensitive,
    critical: row.critical,
    defaultTarget: target.success ? target.data : { type: 'source' },
    enabled: row.enabled,
    drained: Number(row.drainedCount),
    depth: queue?.messages ?? null,
    consumers: queue?.consumers ?? null,
    lastDrainAt: row.lastDrainAt?.toISOString() ?? null,
    error: queue === null && !row.lastError && row.kind !== 'jetstream' ? `queue "${row.queue}" not found on the broker` : row.lastError,
    errorAt: row.lastErrorAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  }
}
