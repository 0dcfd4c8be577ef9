import 'server-only'
import type { InFlightWindow } from './in-flight-window'
import type { LeaseKeeper } from './lease-keeper'
import type { OutcomeWriter } from './outcome-writer'
import type { RunControl } from './run-control'
import type { TokenBucket } from './token-bucket'

/** What a publisher of either broker waits on before each publish (publisher.ts, jetstream-publisher.ts). */
export type PublishSlot = {
  control: RunControl
  lease: LeaseKeeper
  outcomes: OutcomeWriter
  window: InFlightWindow
  bucket: TokenBucket
  unconfirmed: () => number
  /** No channel or connection to publish on: `connect` opens one (retrying while the broker is away). */
  needsConnection: () => boolean
  connect: () => Promise<void>
  /** What else holds publishing back for now: a blocked connection, a full client buffer. */
  heldBack: () => boolean
}

/**
 * Waits until a publish may go: a connection, nothing holding it back, a fresh lease, room in the in-flight window and
 * in the outcome writer's backlog, and a token of the job's rate (taken). False when publishing must stop.
 */
export async function waitForPublishSlot(slot: PublishSlot): Promise<boolean> {
  const { control } = slot
  for (;;) {
    if (control.mustStopPublishing()) return false
    if (slot.needsConnection()) {
      await slot.connect()
      continue
    }
    if (slot.heldBack() || !slot.lease.fresh() || slot.window.closed(slot.unconfirmed()) || slot.outcomes.backlogFull()) {
      await control.pause(100)
      continue
    }
    const wait = slot.bucket.take()
    if (wait > 0) {
      await control.pause(wait)
      continue
    }
    return true
  }
}
