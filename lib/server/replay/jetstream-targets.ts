import 'server-only'
import { JetStreamApiError, jetstreamManager, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { natsConnectionOptions, type NatsSettings } from '@/lib/server/platform/broker/nats'
import { subjectMatches } from '@/lib/shared/nats-subjects'
import type { ReplayPlanTargetDto } from '@/lib/shared/schemas/replay'

/** A plan asks the server for a few seconds at most: it is a request someone is waiting on. */
const ASK_TIMEOUT_MS = 3_000
const MAX_NAMES = 20

export type JetStreamRoute = { subject: string; n: number }

type StreamFacts = { name: string; duplicateWindowSeconds: number; consumers: string[] }

/**
 * Where JetStream copies would go (docs/jetstream.md#replay), per subject: the stream that captures it (none: the
 * copies come back unroutable), that stream's consumers whose filter takes the subject (more than one: consumers that
 * processed the message already get it again, a fan-out as on RabbitMQ), and how long the stream drops duplicate
 * copies (a crash's re-publishes later than that are stored twice). Unreachable NATS leaves routing unknown, with a
 * warning, as an unreachable management API does for RabbitMQ.
 */
export async function describeJetStreamTargets(options: { routes: JetStreamRoute[]; nats: NatsSettings | null; leaseMs: number; warnings: string[] }): Promise<ReplayPlanTargetDto[]> {
  const { routes, nats, leaseMs, warnings } = options
  const bySubject = new Map<string, number>()
  for (const r of routes) bySubject.set(r.subject, (bySubject.get(r.subject) ?? 0) + r.n)
  if (bySubject.size === 0) return []
  const unknown = (subject: string, messages: number): ReplayPlanTargetDto => ({
    exchange: '', routingKey: subject, messages, exists: null, queues: null, queueNames: [], alternateExchange: null, fansOut: false, broker: 'jetstream', stream: null, duplicateWindowSeconds: null,
  })
  if (!nats) return [...bySubject].map(([subject, n]) => unknown(subject, n))
  let facts: Map<string, StreamFacts | null>
  try {
    facts = await askStreams(nats, [...bySubject.keys()])
  } catch (error) {
    warnings.push(`Could not ask the NATS server which streams capture the subjects (${(error as Error).message}); routing is unknown.`)
    return [...bySubject].map(([subject, n]) => unknown(subject, n))
  }
  const shortWindows = new Set<string>()
  const targets = [...bySubject].map(([subject, messages]): ReplayPlanTargetDto => {
    const stream = facts.get(subject) ?? null
    if (!stream) {
      warnings.push(`No stream captures subject "${subject}": its ${messages} message${messages === 1 ? '' : 's'} will come back unroutable and stay dead.`)
      return { ...unknown(subject, messages), exists: false, queues: 0 }
    }
    const consumers = stream.consumers.filter((c) => c.length > 0)
    const fansOut = consumers.length > 1
    if (fansOut) {
      warnings.push(`Subject "${subject}" reaches ${consumers.length} consumers of stream "${stream.name}" (${consumers.slice(0, MAX_NAMES).join(', ')}): consumers that processed the message already get it again. Allow the fan-out to replay anyway.`)
    }
    if (stream.duplicateWindowSeconds * 1000 < 2 * leaseMs) shortWindows.add(stream.name)
    return {
      exchange: '', routingKey: subject, messages, exists: true, queues: consumers.length, queueNames: consumers.slice(0, MAX_NAMES), alternateExchange: null, fansOut,
      broker: 'jetstream', stream: stream.name, duplicateWindowSeconds: stream.duplicateWindowSeconds,
    }
  })
  for (const name of shortWindows) {
    const seconds = [...facts.values()].find((f) => f?.name === name)?.duplicateWindowSeconds ?? 0
    warnings.push(`Stream "${name}" drops duplicate copies for ${seconds} s only, less than twice the replay lease (${Math.round(leaseMs / 1000)} s): a copy that a crashed replay publishes again after that is stored twice.`)
  }
  return targets
}

/** For each subject, the stream that captures it and its facts, or null; one connection for the whole question. */
async function askStreams(nats: NatsSettings, subjects: string[]): Promise<Map<string, StreamFacts | null>> {
  const nc = await connect({ ...natsConnectionOptions(nats, 'lazarus-plan'), timeout: ASK_TIMEOUT_MS, maxReconnectAttempts: 0 })
  try {
    const jsm = await jetstreamManager(nc, { timeout: ASK_TIMEOUT_MS })
    const streams = new Map<string, Promise<{ info: StreamInfo; consumers: { name: string; filters: string[] }[] }>>()
    const out = new Map<string, StreamFacts | null>()
    for (const subject of subjects) {
      const name = await findStream(jsm, subject)
      if (name === null) {
        out.set(subject, null)
        continue
      }
      if (!streams.has(name)) streams.set(name, readStream(jsm, name))
      const { info, consumers } = await streams.get(name)!
      out.set(subject, {
        name,
        duplicateWindowSeconds: Math.round(info.config.duplicate_window / 1e9),
        // A consumer without a filter takes every subject of the stream.
        consumers: consumers.filter((c) => c.filters.length === 0 || c.filters.some((f) => subjectMatches(f, subject))).map((c) => c.name).sort(),
      })
    }
    return out
  } finally {
    await nc.close().catch(() => {})
  }
}

async function findStream(jsm: JetStreamManager, subject: string): Promise<string | null> {
  try {
    return await jsm.streams.find(subject)
  } catch (error) {
    // 10059: stream not found, the client's answer when no stream captures the subject.
    if (error instanceof JetStreamApiError && error.code === 10059) return null
    throw error
  }
}

async function readStream(jsm: JetStreamManager, name: string) {
  const info = await jsm.streams.info(name)
  const consumers: { name: string; filters: string[] }[] = []
  for await (const c of jsm.consumers.list(name)) {
    const filters = c.config.filter_subjects ?? (c.config.filter_subject ? [c.config.filter_subject] : [])
    consumers.push({ name: c.name, filters })
  }
  return { info, consumers }
}
