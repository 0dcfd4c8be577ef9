import 'server-only'
import { amqpVhost } from '@/lib/server/platform/broker/amqp-url'
import { getConfig } from '@/lib/server/platform/config'
import type { Sql } from '@/lib/server/platform/db/sql'

/**
 * The vhosts the doctor reads: LAZARUS_TOPOLOGY_VHOSTS (default: AMQP_URL's vhost), and every vhost a source drains
 * from, so a DLQ is never drained without its topology being checked. JetStream sources have no vhost (theirs is
 * empty): the doctor reads the NATS server for them (jetstream/run-jetstream-check.ts).
 */
export async function watchedVhosts({ sql }: { sql: Sql }): Promise<string[]> {
  const config = getConfig()
  const configured = config.LAZARUS_TOPOLOGY_VHOSTS ?? [amqpVhost(config.AMQP_URL)]
  const { rows } = await sql.query<{ vhost: string }>(`SELECT DISTINCT vhost FROM sources WHERE kind <> 'jetstream' ORDER BY vhost`)
  return [...new Set([...configured, ...rows.map((r) => r.vhost)])]
}
