import 'server-only'

/** How long to wait between attempts: exponential from `initialMs`, capped at `maxMs`, spread by `jitter`. */
export type BackoffPolicy = {
  /** Delay before the first retry, in milliseconds. */
  initialMs: number
  /** No delay is longer than this, jitter included, in milliseconds. */
  maxMs: number
  /** Growth per attempt. Default: 2 */
  factor?: number
  /** Each delay is drawn uniformly from base × (1 ± jitter), 0 to 1. Default: 0.2 */
  jitter?: number
}

/**
 * Broker connections (every Lazarus connection, and every process of a deployment, reconnects after a broker restart:
 * the jitter keeps them from arriving in one wave) and setup hooks that failed.
 */
export const RECONNECT_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 10_000, factor: 2, jitter: 0.2 }

/**
 * The delay before retry number `attempt` (1 for the first). The base is capped at maxMs / (1 + jitter), so the
 * largest draw lands on maxMs exactly: capping after the jitter instead would pile half of the saturated draws onto
 * maxMs itself and undo the spreading (amqplib's built-in delay does the same).
 */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const factor = Math.max(1, policy.factor ?? 2)
  const jitter = Math.min(1, Math.max(0, policy.jitter ?? 0.2))
  const initial = Math.max(0, policy.initialMs)
  const max = Math.max(initial, policy.maxMs)
  const base = Math.min(max / (1 + jitter), initial * factor ** Math.max(0, attempt - 1))
  const spread = base * jitter
  return Math.max(0, Math.round(base - spread + random() * 2 * spread))
}

/** A retry loop's position in its policy: next() gives the next delay, reset() starts over after a success. */
export class Backoff {
  private attempts = 0

  constructor(
    private readonly policy: BackoffPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  /** Retries so far since the last reset. */
  get attempt(): number {
    return this.attempts
  }

  next(): number {
    this.attempts++
    return backoffDelay(this.policy, this.attempts, this.random)
  }

  reset(): void {
    this.attempts = 0
  }
}
