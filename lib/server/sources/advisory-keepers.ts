import 'server-only'
import { MAX_DELIVERIES_ADVISORY, TERMINATED_ADVISORY } from '@/lib/server/platform/broker/nats-advisory-subjects'
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream'

/**
 * Which stream keeps a JetStream source's failure advisories (docs/jetstream.md#capture): what the capture engine
 * plans with (lib/server/engines/jetstream-capture/capture-plan.ts) and the sources page reads back
 * (jetstream-source-facts.ts), so both tell the same story.
 */

/** Lazarus' own stream on every stream's failure advisories: its first choice. */
export const EVERY_STREAM_SUBJECTS = [`${MAX_DELIVERIES_ADVISORY}.>`, `${TERMINATED_ADVISORY}.>`]

/** Marks the advisory stream as Lazarus' own: Lazarus changes or deletes no stream without it (docs/jetstream.md#a-teams-own-advisory-stream). */
export const OWN_STREAM_DESCRIPTION = 'Lazarus: consumers\' failure advisories, kept until captured (docs/jetstream.md)'

/** The subjects that carry one stream's failure advisories, for every consumer of it. */
export function advisorySubjects(stream: string): [string, string] {
  return [`${MAX_DELIVERIES_ADVISORY}.${stream}.*`, `${TERMINATED_ADVISORY}.${stream}.*`]
}

export function isOwn(info: StreamInfo | null): boolean {
  return info?.config.description === OWN_STREAM_DESCRIPTION
}

/** Lazarus' own stream keeps every stream's advisories, not only some streams' (narrowed beside a team's stream). */
export function keepsEveryStream(info: StreamInfo): boolean {
  return EVERY_STREAM_SUBJECTS.every((s) => info.config.subjects?.includes(s))
}

/** Why nothing is captured while another stream has the name Lazarus would give its own. */
export function ownStreamTakenProblem(ownStream: string): string {
  return `a stream named ${ownStream} exists and was not created by Lazarus; set LAZARUS_NATS_ADVISORY_STREAM to another name`
}

/** Why a source stream is not captured when several streams keep its advisories. */
export function severalKeepersProblem(stream: string, keepers: readonly string[]): string {
  return `the advisories of ${stream} are kept by several streams (${keepers.join(', ')}); keep them in one`
}

/** A stream's info; null when there is no such stream. */
export async function streamInfo(jsm: JetStreamManager, name: string): Promise<StreamInfo | null> {
  try {
    return await jsm.streams.info(name)
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return null
    throw error
  }
}

/** The streams other than Lazarus' own that keep a source stream's failure advisories (a team's, when any). */
export async function advisoryKeepers(jsm: JetStreamManager, stream: string, own: string): Promise<string[]> {
  const names = new Set<string>()
  for (const subject of advisorySubjects(stream)) {
    for await (const name of jsm.streams.names(subject)) if (name !== own) names.add(name)
  }
  return [...names]
}
