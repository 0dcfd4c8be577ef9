import { afterEach } from 'vitest'
import { connect, type Channel, type ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { readBrokerSnapshot, type BrokerSnapshot } from '@/lib/server/topology/broker-snapshot'
import { diagnose, type Diagnosis } from '@/lib/server/topology/diagnose'
import { emptyEvidence, type TopologyEvidence } from '@/lib/server/topology/topology-evidence'
import { createTestVhost, type TestVhost } from './topology-vhost'

/** A trap built in a fresh vhost: its connection and channel for the test, and a way to run the doctor on it. */
export type TrapBed = {
  vhost: TestVhost
  connection: ChannelModel
  channel: Channel
  snapshot(): Promise<BrokerSnapshot>
  diagnose(options?: { evidence?: TopologyEvidence; sources?: { id: string; queue: string }[]; exitExchanges?: string[] }): Promise<Diagnosis>
  close(): Promise<void>
}

export async function openTrapBed(prefix: string): Promise<TrapBed> {
  const vhost = await createTestVhost(prefix)
  const connection = await connect(vhost.amqpUrl)
  connection.on('error', () => {})
  const channel = await connection.createChannel()
  const snapshot = () => readBrokerSnapshot({ vhost: vhost.name })
  return {
    vhost,
    connection,
    channel,
    snapshot,
    async diagnose(options = {}) {
      return diagnose({ snapshot: await snapshot(), evidence: options.evidence ?? emptyEvidence(), sources: options.sources ?? [], exitExchanges: options.exitExchanges })
    },
    async close() {
      await connection.close().catch(() => {})
      await vhost.remove()
    },
  }
}

/** The findings as [kind, object names] pairs, the way tests state what they expect. */
export const findingsOf = (diagnosis: Diagnosis) => diagnosis.findings.map((f) => [f.kind, f.objects.map((o) => o.name)])

/** A bounded DLQ (max-length, reject-publish), so tests of other traps do not also raise dlq-unbounded. */
export const BOUNDED = { arguments: { 'x-max-length': 1000, 'x-overflow': 'reject-publish' } }

/** For a describe block: `bed(prefix)` opens a trap bed that is closed (its vhost deleted) after each test. */
export function useTrapBeds(): (prefix: string) => Promise<TrapBed> {
  const beds: TrapBed[] = []
  afterEach(async () => {
    while (beds.length > 0) await (beds.pop() as TrapBed).close()
  })
  return async (prefix) => {
    const opened = await openTrapBed(prefix)
    beds.push(opened)
    return opened
  }
}

/**
 * The common shape of a trap: an application's exchange `app` bound to `work` with `key`, `work` dead-lettering to
 * `dlx`, and `dlq` bound to `dlx` with `dlqKey` (bounded unless `dlqArguments` says otherwise).
 */
export async function declareWorkWithDlq(
  channel: Channel,
  names: { app: string; appType?: string; work: string; key: string; dlx: string; dlxType?: string; dlq: string; dlqKey?: string },
  options: { workArguments?: Record<string, unknown>; dlqArguments?: Record<string, unknown> } = {},
): Promise<void> {
  await channel.assertExchange(names.app, names.appType ?? 'direct')
  await channel.assertExchange(names.dlx, names.dlxType ?? 'fanout')
  await channel.assertQueue(names.work, { arguments: { 'x-dead-letter-exchange': names.dlx, ...options.workArguments } })
  await channel.bindQueue(names.work, names.app, names.key)
  await channel.assertQueue(names.dlq, { arguments: options.dlqArguments ?? BOUNDED.arguments })
  await channel.bindQueue(names.dlq, names.dlx, names.dlqKey ?? '')
}
