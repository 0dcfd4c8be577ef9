import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { connect } from '@/lib/server/platform/broker/amqplib'
import { REPLY, replyCodeOf } from '@/lib/server/platform/broker/amqp-errors'
import { BROKER_PROCESS_TAG } from '@/lib/server/platform/broker/connection'
import { withChannel } from '@/lib/server/platform/broker/probe'
import { getConfig } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { logger } from '@/lib/server/platform/log'
import type { TopologyApplyDto } from '@/lib/shared/topology/builder-api'
import { declareObjects } from '@/lib/shared/topology/declare-objects'
import type { BuilderObject, ThreeTierSpecInput } from '@/lib/shared/topology/three-tier'
import { planTopologyApply } from './plan-topology-apply'

const log = logger('topology-builder')

export type ApplyTopologyOptions = { db: Db; vhost: string; spec: ThreeTierSpecInput; actor: string }

/** AMQP_URL with its path replaced by `vhost`: one AMQP connection serves one vhost. */
function vhostUrl(amqpUrl: string, vhost: string): string {
  const url = new URL(amqpUrl)
  url.pathname = `/${encodeURIComponent(vhost)}`
  return url.toString()
}

const describe = (o: BuilderObject) => (o.kind === 'binding' ? `binding ${o.source} → ${o.destination} "${o.routingKey}"` : `${o.kind} ${o.name}`)

/**
 * Applies the builder's topology to a vhost (docs/topology-builder.md#applying-it): plans again, refuses when any
 * queue or exchange exists with other settings (the broker would refuse the declaration, and Lazarus never deletes or
 * changes what exists), and declares the missing objects, in order, on a connection of its own to that vhost, closed
 * afterwards. The audit entry names the actor and every object declared, also when the broker refused one half-way
 * (someone declared it differently since the plan): what was declared before it stays, as a re-run's plan shows.
 */
export async function applyTopology({ db, vhost, spec, actor }: ApplyTopologyOptions): Promise<TopologyApplyDto> {
  const plan = await planTopologyApply({ vhost, spec })
  const conflicts = plan.items.filter((i) => i.action === 'conflict')
  if (conflicts.length) {
    throw new AppError(
      'conflict',
      `Not applied: ${conflicts.map((c) => `${describe(c.object)} exists with other settings (${c.differences.map((d) => d.field).join(', ')})`).join('; ')}. ` +
        'The broker refuses to redeclare an object with other settings; delete or rename it first, or choose another name.',
      { conflicts },
    )
  }
  const toCreate = plan.items.filter((i) => i.action === 'create').map((i) => i.object)
  const created: BuilderObject[] = []
  let failure: unknown = null
  if (toCreate.length) {
    const connection = await connect(vhostUrl(getConfig().AMQP_URL, vhost), {
      clientProperties: { connection_name: 'lazarus-topology-builder', lazarus_process: BROKER_PROCESS_TAG },
    }).catch((error: Error) => {
      throw new AppError('unavailable', `Cannot connect to vhost "${vhost}": ${error.message}`)
    })
    // A refused declaration closes the channel; the connection's own error event repeats it and is not needed.
    connection.on('error', () => {})
    try {
      await withChannel(connection, (channel) => declareObjects(channel, toCreate, (o) => created.push(o)))
    } catch (error) {
      failure = error
    } finally {
      await connection.close().catch((error: Error) => log.warn('closing the builder connection failed', { vhost, error: error.message }))
    }
  }
  const failed = failure === null ? null : toCreate[created.length]!
  const auditId = await recordAudit({
    sql: db.sql,
    actor,
    action: 'topology.applied',
    subject: { type: 'vhost', id: vhost },
    summary: failed
      ? `Applied the three-tier topology "${spec.name}" to vhost ${vhost} in part: ${created.length} of ${toCreate.length} objects declared, then ${describe(failed)} was refused`
      : `Applied the three-tier topology "${spec.name}" to vhost ${vhost}: ${created.length} objects declared, ${plan.counts.unchanged} already there`,
    details: { vhost, spec, created: created.map(describe), unchanged: plan.counts.unchanged },
    outcome: failed ? `refused: ${(failure as Error).message}` : 'applied',
  })
  if (failed) {
    // 406: declared differently since the plan; 403: AMQP_URL's user may not configure that name; else the broker went away.
    const code = replyCodeOf(failure)
    throw new AppError(
      code === REPLY.PRECONDITION_FAILED ? 'conflict' : code === REPLY.ACCESS_REFUSED ? 'unprocessable' : 'unavailable',
      `The broker refused ${describe(failed)} after ${created.length} objects were declared: ${(failure as Error).message}`,
      { created: created.map(describe) },
    )
  }
  return { vhost, created, unchanged: plan.counts.unchanged, auditId }
}
