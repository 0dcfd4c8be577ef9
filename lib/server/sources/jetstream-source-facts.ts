import 'server-only'
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { natsConnectionOptions } from '@/lib/server/platform/broker/nats'
import { getConfig, type Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { JetStreamCaptureRouteDto, JetStreamFactsDto, JetStreamSourceFactsDto } from '@/lib/shared/schemas/source'
import { advisoryKeepers, advisorySubjects, isOwn, keepsEveryStream, ownStreamTakenProblem, severalKeepersProblem, streamInfo } from './advisory-keepers'
import { natsServerNames } from './check-jetstream-source'
import { listSourceRows } from './sources-store'

export type GetJetStreamSourceFactsOptions = {
  db: Db
  config?: Config
  /** How long connecting, and each question to the server, may take: the page polls, so it answers without them. */
  timeoutMs?: number
} & SourceScope

/** Where the advisories of a stream are kept, read the way the capture plans (capture-plan.ts), without changing anything. */
async function captureRouteOf(jsm: JetStreamManager, own: { name: string; info: StreamInfo | null }, stream: string): Promise<JetStreamCaptureRouteDto> {
  if (own.info && !isOwn(own.info)) return { mode: 'none', problem: ownStreamTakenProblem(own.name) }
  if (own.info && keepsEveryStream(own.info)) return { mode: 'own-wide', advisoryStream: own.name }
  if (own.info && advisorySubjects(stream).every((s) => own.info!.config.subjects?.includes(s))) return { mode: 'own-narrow', advisoryStream: own.name }
  const keepers = await advisoryKeepers(jsm, stream, own.name)
  if (keepers.length === 1) return { mode: 'team', advisoryStream: keepers[0] }
  if (keepers.length > 1) return { mode: 'none', problem: severalKeepersProblem(stream, keepers) }
  return { mode: 'none', problem: `no stream keeps its advisories yet: a running capture (a worker with LAZARUS_NATS_URL) makes ${own.name}` }
}

/** The capture consumer's advisories on a stream; null when it has no such consumer yet. */
async function pendingOf(jsm: JetStreamManager, advisoryStream: string, consumer: string): Promise<JetStreamSourceFactsDto['pending']> {
  try {
    const info = await jsm.consumers.info(advisoryStream, consumer)
    return { waiting: info.num_pending, unacked: info.num_ack_pending }
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound) return null
    throw error
  }
}

/** Asks once per key, however many sources ask: sources share streams, and the advisory stream is usually one. */
function once<T>(ask: (key: string) => Promise<T>): (key: string) => Promise<T> {
  const asked = new Map<string, Promise<T>>()
  return (key) => {
    if (!asked.has(key)) asked.set(key, ask(key))
    return asked.get(key)!
  }
}

/**
 * The facts of the caller's JetStream sources as the NATS server tells them now (docs/jetstream.md#the-source-page):
 * which stream keeps each source's advisories and how the capture reads it, how many advisories its consumer has
 * yet to capture, and the source stream's retention. A server that is not configured, unreachable or slow is an
 * answer too (`natsError`, or a source's `problem`), never a failed request: the sources page shows it beside the rest.
 */
export async function getJetStreamSourceFacts({ db, config = getConfig(), timeoutMs = 2_000, ...scope }: GetJetStreamSourceFactsOptions): Promise<JetStreamFactsDto> {
  const consumer = config.LAZARUS_NATS_CONSUMER
  const rows = (await listSourceRows({ prisma: db.prisma, ids: allowedSourceIds(scope) })).filter((r) => r.kind === 'jetstream' && r.stream !== null)
  if (rows.length === 0) return { consumer, sources: [], natsError: null }
  if (!config.LAZARUS_NATS_URL) return { consumer, sources: [], natsError: 'LAZARUS_NATS_URL is not set: Lazarus has no NATS server to ask (docs/jetstream.md#connecting)' }

  let nc: NatsConnection
  try {
    nc = await connect({ ...natsConnectionOptions({ ...config, LAZARUS_NATS_URL: config.LAZARUS_NATS_URL }, 'lazarus-web'), timeout: timeoutMs, maxReconnectAttempts: 0 })
  } catch (error) {
    return { consumer, sources: [], natsError: `cannot reach NATS at ${natsServerNames(config.LAZARUS_NATS_URL)}: ${(error as Error).message}` }
  }
  try {
    const jsm = await jetstreamManager(nc, { timeout: timeoutMs })
    const ownName = config.LAZARUS_NATS_ADVISORY_STREAM
    const own = { name: ownName, info: await streamInfo(jsm, ownName) }
    const routeOf = once((stream) => captureRouteOf(jsm, own, stream))
    const pending = once((advisoryStream) => pendingOf(jsm, advisoryStream, consumer))
    const info = once((stream) => streamInfo(jsm, stream))
    const sources = await Promise.all(
      rows.map(async (row): Promise<JetStreamSourceFactsDto> => {
        const stream = row.stream!
        const sourceId = row.id.toString()
        try {
          const [streamState, capture] = await Promise.all([info(stream), routeOf(stream)])
          return {
            sourceId, stream, retention: streamState?.config.retention ?? null, capture,
            pending: capture.mode === 'none' ? null : await pending(capture.advisoryStream),
            problem: streamState ? null : `stream ${stream} no longer exists on the NATS server`,
          }
        } catch (error) {
          const problem = `the NATS server did not answer about ${stream}: ${(error as Error).message}`
          return { sourceId, stream, retention: null, capture: { mode: 'none', problem }, pending: null, problem }
        }
      }),
    )
    return { consumer, sources, natsError: null }
  } catch (error) {
    return { consumer, sources: [], natsError: `cannot ask NATS at ${natsServerNames(config.LAZARUS_NATS_URL)}: ${(error as Error).message}` }
  } finally {
    await nc.close().catch(() => undefined)
  }
}
