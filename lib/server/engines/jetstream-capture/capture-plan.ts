import 'server-only'
import { AckPolicy, DeliverPolicy, DiscardPolicy, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream'
import {
  advisoryKeepers, advisorySubjects, EVERY_STREAM_SUBJECTS, isOwn, keepsEveryStream, OWN_STREAM_DESCRIPTION, ownStreamTakenProblem, severalKeepersProblem, streamInfo,
} from '@/lib/server/sources/advisory-keepers'

/**
 * Advisories are kept two weeks, read or not: a limits stream, not a work queue, so that every Lazarus installation
 * on the account reads all of them with a consumer of its own (a work queue allows one). They are small (about 300
 * bytes each).
 */
const ADVISORY_MAX_AGE_NS = 14 * 24 * 3600 * 1e9
/** Subject overlap with an existing stream (nats-server's error code). */
const SUBJECTS_OVERLAP = 10065

/** The durable consumer that reads advisories (on Lazarus' own stream and on a team's), and its ack wait. */
export type CaptureConsumer = { name: string; ackWaitSeconds: number }

/** Where one source stream's advisories are read: Lazarus' own advisory stream or a stream the team keeps. */
export type CaptureRoute = { advisoryStream: string; owned: boolean }

export type CapturePlan = {
  /** The streams to read with the capture consumer. */
  streams: CaptureRoute[]
  /** By source stream: where its advisories are read, or why they cannot be. */
  bySource: Map<string, CaptureRoute | { problem: string }>
}

function ownStreamConfig(name: string, subjects: string[]) {
  return {
    name, subjects, description: OWN_STREAM_DESCRIPTION, retention: RetentionPolicy.Limits, storage: StorageType.File,
    max_age: ADVISORY_MAX_AGE_NS, discard: DiscardPolicy.Old,
  }
}

/**
 * Makes sure every source stream's failure advisories are kept in a stream and read by the capture consumer
 * (docs/jetstream.md#capture). First choice: Lazarus' own stream on every stream's advisories. When the server refuses
 * it because a team's stream already captures some of them, each source stream is read where its advisories are
 * kept: from the team's stream with Lazarus' own durable consumer (the stream itself is never changed), else from
 * Lazarus' own stream narrowed to the streams no one else captures.
 */
export async function ensureCapturePlan(options: { jsm: JetStreamManager; ownStream: string; consumer: CaptureConsumer; sourceStreams: readonly string[] }): Promise<CapturePlan> {
  const { jsm, ownStream, consumer } = options
  const sourceStreams = [...new Set(options.sourceStreams)].sort()
  const bySource: CapturePlan['bySource'] = new Map()
  const own: CaptureRoute = { advisoryStream: ownStream, owned: true }
  let info = await streamInfo(jsm, ownStream)
  if (info && !isOwn(info)) {
    for (const s of sourceStreams) bySource.set(s, { problem: ownStreamTakenProblem(ownStream) })
    return { streams: [], bySource }
  }
  const wide = info !== null && keepsEveryStream(info)
  if (!info) {
    try {
      info = await jsm.streams.add(ownStreamConfig(ownStream, EVERY_STREAM_SUBJECTS))
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === SUBJECTS_OVERLAP)) throw error
    }
  }
  if (wide || (info && keepsEveryStream(info))) {
    for (const s of sourceStreams) bySource.set(s, own)
    await ensureConsumer(jsm, ownStream, consumer)
    return { streams: sourceStreams.length > 0 ? [own] : [], bySource }
  }

  // Narrow: a team's stream keeps some advisories.
  const ownSubjects: string[] = []
  const teamStreams = new Set<string>()
  for (const stream of sourceStreams) {
    const keepers = await advisoryKeepers(jsm, stream, ownStream)
    if (keepers.length === 0) {
      ownSubjects.push(...advisorySubjects(stream))
      bySource.set(stream, own)
    } else if (keepers.length === 1) {
      teamStreams.add(keepers[0])
      bySource.set(stream, { advisoryStream: keepers[0], owned: false })
    } else {
      bySource.set(stream, { problem: severalKeepersProblem(stream, keepers) })
    }
  }
  const streams: CaptureRoute[] = []
  if (ownSubjects.length > 0) {
    const current = info?.config.subjects ?? []
    if (!info) await jsm.streams.add(ownStreamConfig(ownStream, ownSubjects))
    else if (ownSubjects.some((s) => !current.includes(s))) await jsm.streams.update(ownStream, { subjects: [...new Set([...current, ...ownSubjects])] })
    await ensureConsumer(jsm, ownStream, consumer)
    streams.push(own)
  }
  for (const team of [...teamStreams].sort()) {
    await ensureConsumer(jsm, team, consumer)
    streams.push({ advisoryStream: team, owned: false })
  }
  return { streams, bySource }
}

/**
 * The capture consumer on a stream, created when missing (an existing one is left as it is). It starts at the
 * advisories that arrive from now on: on a team's stream, the failures it kept before Lazarus came stay there.
 */
async function ensureConsumer(jsm: JetStreamManager, stream: string, consumer: CaptureConsumer): Promise<void> {
  try {
    await jsm.consumers.info(stream, consumer.name)
    return
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === 10014)) throw error
  }
  await jsm.consumers.add(stream, {
    durable_name: consumer.name,
    description: 'Lazarus: stores each failure advisory\'s message, then acknowledges it (docs/jetstream.md)',
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.New,
    ack_wait: consumer.ackWaitSeconds * 1e9,
    max_ack_pending: 2_000,
  })
}
