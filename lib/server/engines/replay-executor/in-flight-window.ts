import 'server-only'

/**
 * The bound on unconfirmed publishes, with hysteresis: once `size` publishes are unconfirmed, the window stays
 * closed until half of them are confirmed. The broker confirms (and syncs) publishes that arrive in bursts in fewer,
 * larger batches than a one-out-one-in trickle, so refilling in bursts beats a sliding window (figures: CHANGELOG.md).
 */
export class InFlightWindow {
  private held = false

  constructor(readonly size: number) {}

  /** Whether another publish must wait, given how many are unconfirmed now. */
  closed(unconfirmed: number): boolean {
    if (unconfirmed >= this.size) this.held = true
    else if (unconfirmed <= this.size / 2) this.held = false
    return this.held
  }
}
